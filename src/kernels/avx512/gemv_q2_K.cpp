// Q2_K x int8 activations, AVX-512 VNNI: 2-bit codes, a 4-bit scale and min per 16 (the K-quant driver, kquant.hpp).
#include <cstddef>

#include "format/blocks.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/kquant.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct Q2K {
  using Block = format::BlockQ2_K;
  static constexpr int kCentre = 0;
  static constexpr bool kMins = true;
  static constexpr bool kSignedScales = false;
  static constexpr int scale_pos(int s) { return s; }

  static KDecoded decode(const Block& b) {
    KDecoded kd{};
    // One byte per sub-block: scale in the low nibble, min in the high one.
    const __m512i table = kd.table = _mm512_and_si512(broadcast_16(b.scales), _mm512_set1_epi8(0x0f));
    kd.scales[0] = scale_words<Q2K, 0>(table);
    kd.scales[1] = scale_words<Q2K, 1>(table);
    const KScales ks = k_scales(&b.d);
    kd.d = ks.d();
    const __m512i both = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    kd.mins = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(both, 4)), ks.dmin());
    // 32 bytes hold 128 values as four 2-bit strips (strip s: values 32s..32s+31); chunk c takes strips 2c % 4 and
    // 2c % 4 + 1 of the bytes of its half.
    for (int c = 0; c < 4; ++c) {
      const __m512i q = broadcast_32(b.qs + 32 * (c / 2));
      const int16_t shift = static_cast<int16_t>(4 * (c % 2));
      kd.w[c] = _mm512_and_si512(_mm512_srlv_epi16(q, words_lo_hi(shift, static_cast<int16_t>(shift + 2))),
                                 _mm512_set1_epi8(3));
    }
    return kd;
  }
};

// Panels transpose the code bytes (panel_decoder.hpp): byte m of 32-byte strip j holds values 128j + 32f + m in bits
// 2f, 2f + 1. The 4-bit sub-scales fold into the codes (sc * q <= 45), which leaves the block's d as every
// sub-block's scale, as the portable decoder has it (format/kquants.cpp).
struct Q2KPanel : KPanel<Q2K> {
  static constexpr int kBits = 2;
  static const uint8_t* piece(const uint8_t* p, int i) { return p + offsetof(format::BlockQ2_K, qs) + 16 * i; }
  static constexpr int chunk(int c, int f) { return 32 * (c / 8) + 8 * f + c % 8; }
  // The sub-scales (the decoding's table, zero-extended into dwords), and d for every sub-block.
  static __m512i multipliers(const uint8_t* p) {
    return _mm512_shuffle_epi8(block(p).table, _mm512_load_si512(kDwordLanes<Q2K::scale_pos>.v));
  }
  static void factors(const uint8_t* p, __m512& scales, __m512& offsets) {
    const KDecoded kd = block(p);
    scales = kd.d;
    offsets = kd.mins;
  }
};

}  // namespace

const GemvFn gemv_q2_K = gemv_k<Q2K>;
const PanelDecodeFn panel_q2_K = decode_panel<Q2KPanel>;

}  // namespace ggufmm::kernels::avx512
