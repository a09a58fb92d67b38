// Q3_K x int8 activations, AVX-512 VNNI: 3-bit codes biased by 4 (two low bits plus a high-bit plane), signed
// 6-bit scales per 16 (see the K-quant driver).
#include <cstddef>

#include "format/blocks.hpp"
#include "kernels/avx512/gemv.hpp"
#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct Q3K {
  using Block = format::BlockQ3_K;
  static constexpr int kCentre = 4;
  static constexpr bool kMins = false;
  static constexpr bool kSignedScales = true;
  static constexpr int scale_pos(int s) { return s; }

  // The sixteen scales, biased by 32: low nibbles in bytes 0-7 (sub-blocks 0-7 low, 8-15 high), top two bits in
  // bytes 8-11 (byte 8 + s % 4, bits 2 * (s / 4)). Read from 4 bytes before the scales, so that bytes 0-3, 4-7 and
  // 8-11 are dwords 1, 2 and 3 of each 128-bit lane.
  static __m512i scale_table(const Block& b) {
    const __m512i raw = broadcast_16(reinterpret_cast<const uint8_t*>(&b) + offsetof(Block, scales) - 4);
    const __m512i twice = _mm512_shuffle_epi8(raw, _mm512_broadcast_i32x4(_mm_setr_epi8(4, 5, 6, 7, 8, 9, 10, 11, 4, 5,
                                                                                           6, 7, 8, 9, 10, 11)));
    const __m512i low = _mm512_and_si512(
        _mm512_srlv_epi16(twice, _mm512_broadcast_i32x4(_mm_setr_epi16(0, 0, 0, 0, 4, 4, 4, 4))), _mm512_set1_epi8(0x0f));
    // Dword j holds bytes 8-11 again, rotated so that bits 2j, 2j+1 of each byte land on bits 4, 5.
    const __m512i top = _mm512_rolv_epi32(
        _mm512_shuffle_epi8(raw, _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 12, 13, 14, 15, 12, 13, 14, 15,
                                                                      12, 13, 14, 15))),
        _mm512_broadcast_i32x4(_mm_setr_epi32(4, 2, 0, 30)));
    const __m512i biased = _mm512_ternarylogic_epi32(low, top, _mm512_set1_epi8(0x30), 0xf8);  // low | (top & mask)
    return _mm512_sub_epi8(biased, _mm512_set1_epi8(32));
  }

  static KDecoded decode(const Block& b) {
    KDecoded kd{};
    const __m512i table = kd.table = scale_table(b);
    kd.scales[0] = scale_words<Q3K, 0>(table);
    kd.scales[1] = scale_words<Q3K, 1>(table);
    kd.d = k_scale(b.d);
    // Low two bits as Q2_K's strips; the high bit of value 32g + l is bit g of hmask[l] (the code's bit 2).
    const __m512i hmask = broadcast_32(b.hmask);
    for (int c = 0; c < 4; ++c) {
      const __m512i q = broadcast_32(b.qs + 32 * (c / 2));
      const int16_t shift = static_cast<int16_t>(4 * (c % 2));
      const __m512i low = _mm512_and_si512(
          _mm512_srlv_epi16(q, words_lo_hi(shift, static_cast<int16_t>(shift + 2))), _mm512_set1_epi8(3));
      const __mmask64 high = _mm512_test_epi8_mask(hmask, bytes_lo_hi(uint8_t(1 << (2 * c)), uint8_t(2 << (2 * c))));
      kd.w[c] = _mm512_mask_add_epi8(low, high, low, _mm512_set1_epi8(4));
    }
    return kd;
  }
};

}  // namespace

const GemvFn gemv_q3_K = gemv_k<Q3K>;
const PanelDecodeFn panel_q3_K = panel_rows<KPanel<Q3K>>;

}  // namespace ggufmm::kernels::avx512
