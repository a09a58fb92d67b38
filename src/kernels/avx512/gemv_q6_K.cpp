// Q6_K x int8 activations, AVX-512 VNNI: 6-bit codes biased by 32 (low nibbles plus a plane of 2-bit tops), int8
// scales per 16 (the K-quant driver, kquant.hpp).
#include "format/blocks.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/kquant.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct Q6K {
  using Block = format::BlockQ6_K;
  static constexpr int kCentre = 32;
  static constexpr bool kMins = false;
  static constexpr bool kSignedScales = true;
  static constexpr int scale_pos(int s) { return s; }

  static KDecoded decode(const Block& b) {
    KDecoded kd{};
    const __m512i table = kd.table = broadcast_16(b.scales);
    kd.scales[0] = scale_words<Q6K, 0>(table);
    kd.scales[1] = scale_words<Q6K, 1>(table);
    kd.d = k_scale(b.d);
    // Half h (values 128h..128h+127): ql[64h + l] holds values 128h + l (low nibble) and 128h + 64 + l (high), and
    // bits 2s, 2s+1 of qh[32h + l] are the tops of value 128h + 32s + l. Chunk 2h is values 128h..128h+63.
    for (int h = 0; h < 2; ++h) {
      const __m512i ql = _mm512_loadu_si512(b.ql + 64 * h);
      const __m512i qh = broadcast_32(b.qh + 32 * h);
      const __m512i mask = _mm512_set1_epi8(0x30);
      const __m512i low0 = _mm512_and_si512(ql, _mm512_set1_epi8(0x0f));
      const __m512i low1 = _mm512_and_si512(_mm512_srli_epi16(ql, 4), _mm512_set1_epi8(0x0f));
      const __m512i top0 = _mm512_sllv_epi16(qh, words_lo_hi(4, 2));
      const __m512i top1 = _mm512_srlv_epi16(qh, words_lo_hi(0, 2));
      kd.w[2 * h] = _mm512_ternarylogic_epi32(low0, top0, mask, 0xf8);  // low | (top & mask)
      kd.w[2 * h + 1] = _mm512_ternarylogic_epi32(low1, top1, mask, 0xf8);
    }
    return kd;
  }
};

}  // namespace

const GemvFn gemv_q6_K = gemv_k<Q6K>;
const PanelDecodeFn panel_q6_K = decode_panel<KPanel<Q6K>>;

}  // namespace ggufmm::kernels::avx512
