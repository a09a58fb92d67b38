// Q3_K x int8 activations, AVX-512 VNNI: 3-bit codes biased by 4 (two low bits plus a high-bit plane), signed
// 6-bit scales per 16 (the K-quant driver, kquant.hpp).
#include <cstddef>
#include <cstdint>

#include "format/blocks.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/kquant.hpp"
#include "kernels/avx512/panels.hpp"

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

// Panels fold the signed sub-scales into the codes, negated: -sc * q lies in [-128, 124] where sc * q would reach
// 128. That leaves -d as every sub-block's scale, one per block, and tile kernels of one scale per 32 values. The
// products are ggml's (d * sc and its product with q are exact in f32), but a zero takes the sign of -d, where
// ggml's takes that of d * sc: the panels differ from ggml's dequantization only there, which no dot product sees.
struct Q3KPanel : KPanel<Q3K> {
  // Word j of a chunk's product table: sub-block j / 8 of the chunk, code j % 8 (level j % 8 - 4, negated).
  struct WordTables {
    alignas(64) int16_t sub[32], minus_level[32];
  };
  static constexpr WordTables kWords = [] {
    WordTables t{};
    for (int j = 0; j < 32; ++j) {
      t.sub[j] = static_cast<int16_t>(j / 8);
      t.minus_level[j] = static_cast<int16_t>(4 - j % 8);
    }
    return t;
  }();

  static void decode(const uint8_t* p, __m512i (&q)[4], __m512& scales, __m512& offsets) {
    const KDecoded kd = block(p);
    const __m512i sc = _mm512_cvtepi8_epi16(_mm512_castsi512_si256(kd.table));  // words 0-15: the 16 scales
    const __m512i sub = _mm512_load_si512(kWords.sub), minus_level = _mm512_load_si512(kWords.minus_level);
    for (int c = 0; c < 4; ++c) {
      const __m512i which = _mm512_add_epi16(sub, _mm512_set1_epi16(static_cast<int16_t>(4 * c)));
      const __m512i products = _mm512_mullo_epi16(_mm512_permutexvar_epi16(which, sc), minus_level);
      // Sub-block L's 8 products to the low half of lane L, where its 16 codes look them up.
      const __m512i table = _mm512_permutexvar_epi64(_mm512_set_epi64(3, 3, 2, 2, 1, 1, 0, 0),
                                                     _mm512_castsi256_si512(_mm512_cvtepi16_epi8(products)));
      q[c] = _mm512_shuffle_epi8(table, kd.w[c]);
    }
    scales = negated(kd.d);
    offsets = _mm512_setzero_ps();
  }
};

}  // namespace

const GemvFn gemv_q3_K = gemv_k<Q3K>;
const PanelDecodeFn panel_q3_K = decode_panel<Q3KPanel>;

}  // namespace ggufmm::kernels::avx512
