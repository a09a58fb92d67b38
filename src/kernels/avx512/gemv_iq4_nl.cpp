// IQ4_NL x int8 activations, AVX-512 VNNI: four 32-value blocks per unit.
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/nibble.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct IQ4NL {
  static constexpr int kUnitValues = 128;
  static constexpr int kSteps = 1;
  static constexpr const int8_t (&kLevels)[16] = format::kIQ4Values;
  static constexpr int kBias = 128;
  static constexpr int kBlockWords = sizeof(format::BlockIQ4_NL) / 2;  // 9: every block starts at an even byte
  static constexpr int kUnitBytes = 4 * sizeof(format::BlockIQ4_NL);   // 72

  // The 16 code bytes of block g: byte j holds values j and 16 + j.
  static const uint8_t* group_codes(const uint8_t* p, int g) {
    return p + g * sizeof(format::BlockIQ4_NL) + offsetof(format::BlockIQ4_NL, qs);
  }

  // Word permutes over the unit's first 64 bytes and its last 8 (words 32-35), as one 128-byte table.
  // Codes, transposed: dword 4L + g holds code bytes 4L..4L+3 of block g, unit words 9g + 1 + 2L and the next.
  static __m512i code_words() {
    alignas(64) int16_t index[32];
    for (int e = 0; e < 16; ++e) {
      for (int h = 0; h < 2; ++h) {
        index[2 * e + h] = static_cast<int16_t>(kBlockWords * (e % 4) + 1 + 2 * (e / 4) + h);
      }
    }
    return _mm512_load_si512(index);
  }
  // Scales: half e (of 16) is block e % 4's, word 9 * (e % 4) of the unit.
  static __m512i scale_words() {
    alignas(64) int16_t index[32] = {};
    for (int e = 0; e < 16; ++e) index[e] = static_cast<int16_t>(kBlockWords * (e % 4));
    return _mm512_load_si512(index);
  }

  static void decode_at(const uint8_t* p, NibbleWeights (&w)[kSteps]) {
    const __m512i a = load_weights_512(p);
    const __m512i last = _mm512_zextsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 64)));
    w[0].codes = _mm512_permutex2var_epi16(a, code_words(), last);
    const __m512i halves = _mm512_permutexvar_epi16(scale_words(), a);
    w[0].scale = _mm512_cvtph_ps(_mm512_castsi512_si256(halves));
  }

  static void decode(const uint8_t* row, int64_t u, NibbleWeights (&w)[kSteps]) { decode_at(row + u * kUnitBytes, w); }

  // The last 1 to 3 blocks of a row, through a zero-padded copy: zero scales for the missing blocks (whose
  // activations are zero too).
  static void decode_tail(const uint8_t* row, int64_t u, int groups, NibbleWeights (&w)[kSteps]) {
    alignas(64) uint8_t padded[kUnitBytes] = {};
    std::memcpy(padded, row + u * kUnitBytes, static_cast<size_t>(groups) * sizeof(format::BlockIQ4_NL));
    decode_at(padded, w);
  }
};

}  // namespace

const GemvFn gemv_iq4_nl = gemv_nibble<IQ4NL>;
const PanelDecodeFn panel_iq4_nl = decode_panel<NibblePanel<IQ4NL>>;

}  // namespace ggufmm::kernels::avx512
