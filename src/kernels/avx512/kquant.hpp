// The K-quant gemv driver (gemv_k) and the decoding its formats share (scale tables; Q4_K and Q5_K whole, as
// K4Format). K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) are 256-value super-blocks whose sub-blocks of 16 or 32 carry
// small integer scales. Every format's codes are taken as u = q + c >= 0: Q2_K, Q4_K and Q5_K store unsigned codes
// (c = 0; the min term carries their offset), Q3_K and Q6_K signed ones with their own bias as the centre c. The
// integer dot of a lane is then dpbusd(u, x) - c * (sum of the lane's 4 activations); that correction depends on
// the activations only, so each call computes it once per row and feeds it to dpbusd as the accumulator.
//
// A super-block is decoded once for all rows into four 64-value chunks of codes in value order and the int16
// scale words of two chunk pairs. Each row then takes per chunk one dpbusd (lane l: values 4l..4l+3, inside one
// sub-block of 16 and one activation group), packs each chunk pair to int16 (a 4-value dot stays under 2^15: at
// most 4 * 31 * 128 unsigned, 4 * 32 * 128 centred), applies the sub-block scales with one vpmaddwd per pair
// (Q5_K's words at most 2 * 15872 * 63), and ends with one float multiply-add per pair
// against the activation scales spread over its lanes. The min term is one multiply-add against the activation sums.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx512/row_sums.hpp"
#include "kernels/kernels.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"
#include "kernels/x86/common.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// One super-block, decoded.
struct KDecoded {
  __m512i w[4];       // chunk c: codes u of values 64c..64c+63
  __m512i scales[2];  // chunk pair p (chunks 2p, 2p+1) packed: the integer scale of each word
  __m512 mins;        // asymmetric only: dmin * m per sub-block of 16 (dropped times the sums)
  __m512 d;           // the super-block scale in every lane
  __m512i table;      // the format's 16-byte scale table (see scale_pos), in every 128-bit lane
};

// A format supplies:
//
//   struct Format {
//     using Block = ...;
//     static constexpr int kCentre;           // c: codes u = q + c
//     static constexpr bool kMins;            // w = d * sc * q - dmin * m
//     static constexpr bool kSignedScales;    // per-16 scales below zero (Q3_K, Q6_K)
//     static constexpr int scale_pos(int s);  // byte of decode's 16-byte scale table holding sub-block s's scale
//     static KDecoded decode(const Block& b);
//   };

// vpshufb indices from a scale table (the same 16 bytes in every 128-bit lane) to the scale words of chunk pair P.
// After packing, words 0-3 of lane L come from sub-block 8P + L and words 4-7 from sub-block 8P + 4 + L. Unsigned
// scales go to the low byte; signed ones to the high byte, which keeps their sign and scales the words by 256. The
// other byte is zeroed (an index with the top bit set).
template <class F, int P>
inline constexpr IndexVector<int8_t, 64> kScaleWords = [] {
  IndexVector<int8_t, 64> t{};
  const int at = F::kSignedScales ? 1 : 0;
  for (int lane = 0; lane < 4; ++lane) {
    for (int word = 0; word < 8; ++word) {
      t.v[16 * lane + 2 * word + 1 - at] = -128;
      t.v[16 * lane + 2 * word + at] = static_cast<int8_t>(F::scale_pos(8 * P + lane + (word < 4 ? 0 : 4)));
    }
  }
  return t;
}();

template <class F, int P>
inline __m512i scale_words(__m512i table) {
  return _mm512_shuffle_epi8(table, _mm512_load_si512(kScaleWords<F, P>.v));
}

// vpshufb indices that zero-extend table byte Pos(s) into dword lane s, for s = 0..15 (lane s sits in 128-bit lane
// s / 4, where the table repeats).
template <int (*Pos)(int)>
inline constexpr IndexVector<int8_t, 64> kDwordLanes = [] {
  IndexVector<int8_t, 64> t{};
  for (int s = 0; s < 16; ++s) {
    t.v[4 * s] = static_cast<int8_t>(Pos(s));
    t.v[4 * s + 1] = t.v[4 * s + 2] = t.v[4 * s + 3] = -128;
  }
  return t;
}();
template <int (*Pos)(int)>
inline __m512 table_lanes(__m512i table) {
  return _mm512_cvtepi32_ps(_mm512_shuffle_epi8(table, _mm512_load_si512(kDwordLanes<Pos>.v)));
}

// The integer scale of each sub-block of 16 as a float per lane, from the table: zero-extended, or signed scales
// through the top byte of each dword.
template <int (*Pos)(int)>
inline constexpr IndexVector<int8_t, 64> kDwordTops = [] {
  IndexVector<int8_t, 64> t{};
  for (int s = 0; s < 16; ++s) {
    t.v[4 * s] = t.v[4 * s + 1] = t.v[4 * s + 2] = -128;
    t.v[4 * s + 3] = static_cast<int8_t>(Pos(s));
  }
  return t;
}();
// Signed scales as sc * 2^24 (the scale in the top byte of each dword, an integer that is exactly a float), for
// uses that fold the 2^-24 into a factor of their own.
template <class F>
inline __m512 scale_tops(__m512i table) {
  return _mm512_cvtepi32_ps(_mm512_shuffle_epi8(table, _mm512_load_si512(kDwordTops<F::scale_pos>.v)));
}
template <class F>
inline __m512 sub_scales(__m512i table) {
  if constexpr (F::kSignedScales) {
    return _mm512_mul_ps(scale_tops<F>(table), _mm512_set1_ps(1.0f / 16777216.0f));
  } else {
    return table_lanes<F::scale_pos>(table);
  }
}

// After packing chunks (2P, 2P+1) and vpmaddwd, lane 4L + j holds sub-block 8P + L (j < 2) or 8P + 4 + L (j >= 2):
// activation group 4P + L / 2 or 4P + 2 + L / 2 of the super-block.
template <int P>
inline __m512i pair_groups() {
  constexpr int g = 4 * P;
  return _mm512_set_epi32(g + 3, g + 3, g + 1, g + 1, g + 3, g + 3, g + 1, g + 1, g + 2, g + 2, g, g, g + 2, g + 2,
                          g, g);
}

// The 16 bytes at p in every 128-bit lane.
inline __m512i broadcast_16(const void* p) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}
// The 32 bytes at p in both 256-bit halves.
inline __m512i broadcast_32(const void* p) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
}

// A 64-byte constant: `lo` in each of the low 32 bytes, `hi` in each of the high 32.
inline __m512i bytes_lo_hi(uint8_t lo, uint8_t hi) {
  const auto spread = [](uint8_t v) { return static_cast<long long>(0x0101010101010101ull * v); };
  return _mm512_set_epi64(spread(hi), spread(hi), spread(hi), spread(hi), spread(lo), spread(lo), spread(lo),
                          spread(lo));
}
// A 64-byte constant of int16 words: `lo` in each of the low 16 words, `hi` in each of the high 16.
inline __m512i words_lo_hi(int16_t lo, int16_t hi) {
  return _mm512_inserti64x4(_mm512_set1_epi16(lo), _mm256_set1_epi16(hi), 1);
}

// Super-block scales d and dmin from the two halves at p: one dword load and one conversion for both.
struct KScales {
  __m512 both;  // d, dmin, d, dmin, ...
  __m512 d() const { return _mm512_moveldup_ps(both); }
  __m512 dmin() const { return _mm512_movehdup_ps(both); }
};
inline KScales k_scales(const void* p) {
  return {_mm512_cvtph_ps(_mm256_set1_epi32(_mm_cvtsi128_si32(_mm_loadu_si32(p))))};
}
// A lone super-block scale in every lane.
inline __m512 k_scale(uint16_t d) { return _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<int16_t>(d))); }

// What a super-block drops per sub-block of 16, times the activation sums: dmin * m (formats with mins), or
// d * sc * c (formats with a centre, whose codes are u = q + c), times 256 as their signed scale words are.
template <class F>
inline __m512 k_dropped(const KDecoded& kd) {
  if constexpr (F::kMins) {
    return kd.mins;
  } else {
    static_assert(F::kSignedScales, "the centred formats have signed scales");
    // sc * 2^24 times d * c / 2^16.
    const __m512 factor = _mm512_mul_ps(kd.d, _mm512_set1_ps(static_cast<float>(F::kCentre) / 65536.0f));
    return _mm512_mul_ps(scale_tops<F>(kd.table), factor);
  }
}

template <class F, int NR>
void gemv_k_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                 int64_t ldy, const float* residual) {
  constexpr int kValues = 256;
  // Each chunk pair's sums take their activation scales spread over their lanes. Up to 5 rows those are worked
  // out once a slice, for every weight row to load; from 6 rows loading them costs more than permuting them for
  // each weight row (docs/performance.md, K-quant scales).
  constexpr bool kSpreadOnce = NR <= 5;
  // Every weight row reads all activation rows: a row is taken in slices whose activations, sums and scales
  // (352 bytes per row and super-block, 448 with the scales spread) fit 36 KB, most of a Xeon's 48 KiB L1. (Cores
  // with 32 KiB keep the same slices: cut for them, the rows are read in more pieces and stream slower.)
  constexpr int64_t kMaxSlice = (36 << 10) / ((kSpreadOnce ? 448 : 352) * NR);
  constexpr bool kDrops = F::kMins || F::kCentre != 0;
  // With few rows a super-block takes few cycles: separate accumulators for the dropped terms keep the chains
  // short.
  constexpr bool kDropAcc = kDrops && NR <= 2;
  const int64_t blocks = x.k / kValues;
  const int64_t groups = x.k / kGroup;
  const int64_t slices = (blocks + kMaxSlice - 1) / kMaxSlice;
  const int64_t per_slice = (blocks + slices - 1) / slices;
  const __m512i spread0 = pair_groups<0>();
  const __m512i spread1 = pair_groups<1>();
  const auto scales_of = [&](int r, int64_t j) { return _mm256_loadu_ps(x.d + r * groups + j * 8); };
  [[maybe_unused]] __m512 spread[kSpreadOnce ? NR : 1][kSpreadOnce ? kMaxSlice : 1][2];
  for (int64_t j0 = 0; j0 < blocks; j0 += per_slice) {
    const int64_t j1 = blocks - j0 < per_slice ? blocks : j0 + per_slice;
    if constexpr (kSpreadOnce) {
      for (int r = 0; r < NR; ++r) {
        for (int64_t j = j0; j < j1; ++j) {
          const __m512 dx = _mm512_castps256_ps512(scales_of(r, j));
          spread[r][j - j0][0] = _mm512_permutexvar_ps(spread0, dx);
          spread[r][j - j0][1] = _mm512_permutexvar_ps(spread1, dx);
        }
      }
    }
    // Signed scale words carry a factor 256 (their high byte), and so do their dropped terms.
    RowSums<NR> sums(y, ldy, j0 > 0 ? y : residual, F::kSignedScales ? 1.0f / 256 : 1.0f);
    for (int64_t o = m0; o < m1; ++o) {
      const auto* b = reinterpret_cast<const typename F::Block*>(w + static_cast<size_t>(o) * row_bytes);
      __m512 acc[NR], accd[NR];
      unroll<NR>([&]<int R>() { acc[R] = accd[R] = _mm512_setzero_ps(); });
      SlicePrefetch<sizeof(typename F::Block), weight_cache(NR)> ahead(w, row_bytes, o, j0, j1);
      for (int64_t j = j0; j < j1; ++j) {
        ahead.step();
        const KDecoded kd = F::decode(b[j]);
        [[maybe_unused]] __m512 dropped;
        if constexpr (kDrops) dropped = k_dropped<F>(kd);
        unroll<NR>([&]<int R>() {
          const int8_t* xq = x.q + R * x.k + j * kValues;
          __m512i dot[4];
          for (int c = 0; c < 4; ++c) {
            dot[c] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), kd.w[c], _mm512_loadu_si512(xq + 64 * c));
          }
          // A dword sums 4 products of a code (at most 63) and an activation (|q| <= 127): the words hold it.
          const __m512i s0 = _mm512_madd_epi16(_mm512_packs_epi32(dot[0], dot[1]), kd.scales[0]);
          const __m512i s1 = _mm512_madd_epi16(_mm512_packs_epi32(dot[2], dot[3]), kd.scales[1]);
          if constexpr (kSpreadOnce) {
            const __m512(&sp)[2] = spread[R][j - j0];
            const __m512 both =
                _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), sp[1], _mm512_mul_ps(_mm512_cvtepi32_ps(s0), sp[0]));
            acc[R] = _mm512_fmadd_ps(both, kd.d, acc[R]);
          } else {
            const __m512 ds = _mm512_castps256_ps512(_mm256_mul_ps(scales_of(R, j), _mm512_castps512_ps256(kd.d)));
            acc[R] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), _mm512_permutexvar_ps(spread0, ds), acc[R]);
            acc[R] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_permutexvar_ps(spread1, ds), acc[R]);
          }
          if constexpr (kDrops) {
            __m512& into = kDropAcc ? accd[R] : acc[R];
            into = _mm512_fnmadd_ps(dropped, _mm512_loadu_ps(x.sum + (R * x.k + j * kValues) / kSumGroup), into);
          }
        });
      }
      if constexpr (kDropAcc) unroll<NR>([&]<int R>() { acc[R] = _mm512_add_ps(acc[R], accd[R]); });
      sums.put(o, acc);
    }
    sums.flush();
  }
}

template <class F>
void gemv_k(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y, int64_t ldy,
            const float* residual) {
  with_rows(x.rows, [&]<int NR>() { gemv_k_rows<F, NR>(w, row_bytes, m0, m1, x, y, ldy, residual); });
}

// Q4_K / Q5_K: the 12 bytes after d and dmin hold eight 6-bit scales and mins (one per sub-block of 32).
// Scales and mins 0-3 are the low 6 bits of bytes 0-3 and 4-7; 4-7 are the nibbles of bytes 8-11 (scale low, min
// high) under the top two bits of bytes 0-3 (scales) and 4-7 (mins). Unpacked into a table repeated in every
// 128-bit lane, bytes 0-7 scales 0-7, bytes 8-15 mins 0-7, by three byte shuffles of the block's first 16 bytes
// (d, dmin and the 12): faster than unpacking them in general registers and moving them over.
template <class B>
inline __m512i k4_scale_table(const B& b) {
  static_assert(offsetof(B, scales) == 4 && sizeof b.scales == 12);
  constexpr int8_t z = -128;  // a shuffle index that zeroes its byte
  const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(&b));  // byte 4 + i: scale byte i
  // Bytes 0-3 (scales 0-3), 8-11 (low nibbles: scales 4-7), 4-7 (mins 0-3), masked below.
  const __m128i low = _mm_shuffle_epi8(head, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, z, z, z, z));
  // The high nibbles of bytes 8-11 at bits 0-3: mins 4-7.
  const __m128i high = _mm_shuffle_epi8(_mm_srli_epi16(head, 4),
                                        _mm_setr_epi8(z, z, z, z, z, z, z, z, z, z, z, z, 12, 13, 14, 15));
  // Bits 6-7 of bytes 0-3 and 4-7 at bits 4-5: the tops of scales 4-7 and mins 4-7.
  const __m128i top = _mm_shuffle_epi8(_mm_srli_epi16(head, 2),
                                       _mm_setr_epi8(z, z, z, z, 4, 5, 6, 7, z, z, z, z, 8, 9, 10, 11));
  const __m128i fields = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15);
  const __m128i tops = _mm_setr_epi8(0, 0, 0, 0, 48, 48, 48, 48, 0, 0, 0, 0, 48, 48, 48, 48);
  const __m128i table = _mm_ternarylogic_epi32(_mm_ternarylogic_epi32(low, high, fields, 0xa8), top, tops,
                                               0xf8);  // ((low | high) & fields) | (top & tops)
  return _mm512_broadcast_i32x4(table);
}

// Chunk c of a Q4_K-style nibble array: 32 bytes hold values 64c..64c+31 in their low nibbles and the next 32 in
// their high nibbles.
inline __m512i k4_nibbles(const uint8_t* qs, int c) {
  const __m512i q = broadcast_32(qs + 32 * c);
  return _mm512_and_si512(_mm512_srlv_epi16(q, words_lo_hi(0, 4)), _mm512_set1_epi8(0x0f));
}

// Q4_K and Q5_K: 4-bit codes (Q5_K: and a plane of fifth bits), 6-bit scales and mins per sub-block of 32.
template <class B>
struct K4Format {
  using Block = B;
  static constexpr bool kFifth = requires(const B& b) { b.qh; };
  static constexpr int kCentre = 0;
  static constexpr bool kMins = true;
  static constexpr bool kSignedScales = false;
  static constexpr int scale_pos(int s) { return s / 2; }
  static constexpr int min_pos(int s) { return 8 + s / 2; }

  static KDecoded decode(const Block& b) {
    KDecoded kd{};
    const __m512i table = kd.table = k4_scale_table(b);
    kd.scales[0] = scale_words<K4Format, 0>(table);
    kd.scales[1] = scale_words<K4Format, 1>(table);
    const KScales ks = k_scales(&b.d);
    kd.d = ks.d();
    kd.mins = _mm512_mul_ps(table_lanes<min_pos>(table), ks.dmin());
    [[maybe_unused]] __m512i qh;
    if constexpr (kFifth) qh = broadcast_32(b.qh);
    for (int c = 0; c < 4; ++c) {
      kd.w[c] = k4_nibbles(b.qs, c);
      if constexpr (kFifth) {
        // Value 32g + l has its fifth bit in bit g of qh[l]: bit 2c for the low half of the chunk, 2c + 1 above.
        const __mmask64 set = _mm512_test_epi8_mask(qh, bytes_lo_hi(uint8_t(1 << (2 * c)), uint8_t(2 << (2 * c))));
        kd.w[c] = _mm512_mask_add_epi8(kd.w[c], set, kd.w[c], _mm512_set1_epi8(16));
      }
    }
    return kd;
  }
};

}  // namespace
}  // namespace ggufmm::kernels::avx512
