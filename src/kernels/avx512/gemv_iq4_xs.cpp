// IQ4_XS x int8 activations, AVX-512 VNNI: one super-block (8 groups of 32 values with 6-bit scales) per unit.
#include <immintrin.h>

#include <cstddef>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/nibble.hpp"
#include "kernels/avx512/panels.hpp"
#include "kernels/x86/iq4.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct IQ4XS {
  static constexpr int kUnitValues = 256;
  static constexpr int kSteps = 2;
  static constexpr int kUnitBytes = sizeof(format::BlockIQ4_XS);
  static constexpr const int8_t (&kLevels)[16] = format::kIQ4Values;
  static constexpr int kBias = 128;

  // The 16 code bytes of group g: byte j holds values j and 16 + j.
  static const uint8_t* group_codes(const uint8_t* p, int g) { return p + offsetof(format::BlockIQ4_XS, qs) + 16 * g; }

  static void decode(const uint8_t* row, int64_t u, NibbleWeights (&w)[kSteps]) {
    const auto& b = reinterpret_cast<const format::BlockIQ4_XS*>(row)[u];
    // Groups 0-3 and 4-7 are 64 contiguous code bytes each, read as two halves (loads.hpp): transpose their
    // dwords (dword 4L + g from 4g + L, the second half's 8 at index 16 on).
    const __m512i transpose = _mm512_set_epi32(23, 19, 7, 3, 22, 18, 6, 2, 21, 17, 5, 1, 20, 16, 4, 0);
    const auto half = [&](int at) {
      return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + at)));
    };
    w[0].codes = _mm512_permutex2var_epi32(half(0), transpose, half(32));
    w[1].codes = _mm512_permutex2var_epi32(half(64), transpose, half(96));
    // Each step's 4 scales repeated in every 128-bit lane: broadcast loads through memory cost no shuffles (the
    // empty asm keeps the compiler from turning them back into register shuffles).
    alignas(32) float scales[8];
    _mm256_store_ps(scales, iq4_xs_group_scales(b));
    __asm__("" : "+m"(scales));
    w[0].scale = _mm512_broadcast_f32x4(_mm_load_ps(scales));
    w[1].scale = _mm512_broadcast_f32x4(_mm_load_ps(scales + 4));
  }

  // Panels: d, scales_h and scales_l lead the block, one factor piece (panel_decoder.hpp), whose 6-bit l + 32 come
  // apart for 16 rows at once: group g's low 4 bits are bits 4g.. of scales_l, its high 2 bits 2g.. of scales_h.
  static __m128i factor_piece(const uint8_t* p, int) {
    static_assert(offsetof(format::BlockIQ4_XS, scales_l) == 4 && sizeof(format::BlockIQ4_XS{}.scales_l) == 4);
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }
  static void lane_factors(const __m512i (&words)[1][4], __m512 (&scales)[8], __m512 (&offsets)[8]) {
    const __m512 d = f16_lanes(words[0][0], 0);
    for (int g = 0; g < 8; ++g) {
      const __m512i low = _mm512_and_si512(_mm512_srli_epi32(words[0][1], 4 * g), _mm512_set1_epi32(15));
      const __m512i high = _mm512_and_si512(_mm512_srli_epi32(words[0][0], 16 + 2 * g), _mm512_set1_epi32(3));
      const __m512i l = _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), _mm512_set1_epi32(32));
      scales[g] = _mm512_mul_ps(d, _mm512_cvtepi32_ps(l));
      offsets[g] = _mm512_setzero_ps();
    }
  }
};

}  // namespace

const GemvFn gemv_iq4_xs = gemv_nibble<IQ4XS>;
const PanelDecodeFn panel_iq4_xs = decode_panel<NibblePanel<IQ4XS>>;

}  // namespace ggufmm::kernels::avx512
