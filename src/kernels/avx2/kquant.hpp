// The K-quant gemv driver (gemv_k) and Q4_K and Q5_K as its formats (K4Format). K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)
// are 256-value super-blocks whose sub-blocks of 16 or 32 carry small integer scales. A super-block is taken one group
// of 32 values (one register) at a time: its weight bytes are decoded once for all activation rows, and each row adds
// one integer dot product, scaled per sub-block of 16 in the integer domain (scaled_dot) where the format's scales are
// per 16, then one float multiply-add by the group's scale. Formats whose scales are per 32 (Q4_K, Q5_K) fold their
// scale into that float instead. Asymmetric formats multiply centred codes q - c (c the middle code, keeping the int16
// partial sums small) and subtract (dmin * m - c * d * sc) times the activation sums.
//
//   struct Format {
//     using Block = ...;
//     static constexpr bool kSigned;          // codes are signed bytes (the sign moves onto the activations)
//     static constexpr bool kMins;            // w = d * sc * q - dmin * m
//     static constexpr int kCentre;           // asymmetric: c
//     static constexpr bool kGroupScales;     // one scale per 32: folded into the float scale of the group
//     static constexpr bool kSignedScales;    // per-16 scales are signed (kept in the high byte of their word)
//     static constexpr int scale_pos(int s);  // per-16 scales: byte of the table that holds sub-block s's
//     explicit Format(const Block& b);        // decodes the scales
//     __m256 group_scales;                    // the float scale of each group of 32 (times the activation's)
//     __m256i table;                          // per-16 scales: 16 bytes, repeated in both 128-bit lanes
//     __m256 mins[2];                         // asymmetric: dmin * m - c * d * sc per sub-block of 16
//     template <int G> __m256i weights(const Block& b) const;  // group G as bytes
//   };
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/avx2/dot.hpp"
#include "kernels/avx2/rows.hpp"
#include "kernels/kernels.hpp"
#include "kernels/level.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"
#include "kernels/x86/common.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// vpshufb indices from the scale table to the scale operand of scaled_dot for group G: sub-block 2G in lanes 0-3,
// 2G + 1 in lanes 4-7. AVX-VNNI multiplies a lane's 4-product sum held in its low word; AVX2 multiplies each of its
// two 2-product sums, so both words carry the scale. Unsigned scales take the low byte of a word, signed ones the
// high byte (keeping their sign, times 256); other bytes are zeroed.
template <class F, int G>
inline constexpr IndexVector<int8_t, 32> kScaleLanes = [] {
  IndexVector<int8_t, 32> t{};
  for (int i = 0; i < 32; ++i) t.v[i] = -128;
  for (int lane = 0; lane < 8; ++lane) {
#if defined(__AVXVNNI__)
    constexpr int kWords = 1;
#else
    constexpr int kWords = 2;
#endif
    for (int word = 0; word < kWords; ++word) {
      t.v[4 * lane + 2 * word + (F::kSignedScales ? 1 : 0)] = static_cast<int8_t>(F::scale_pos(2 * G + lane / 4));
    }
  }
  return t;
}();

template <class F, int G>
inline __m256i scale_lanes(__m256i table) {
  return _mm256_shuffle_epi8(table, _mm256_load_si256(reinterpret_cast<const __m256i*>(kScaleLanes<F, G>.v)));
}

// Halves d and dmin at p as floats in every lane.
struct KScales {
  __m256 d, dmin;
};
inline KScales k_scales(const void* p) {
  const __m256 both = _mm256_cvtph_ps(_mm_set1_epi32(_mm_cvtsi128_si32(_mm_loadu_si32(p))));  // d, dmin, d, ...
  return {_mm256_moveldup_ps(both), _mm256_movehdup_ps(both)};
}
inline __m256 k_scale(uint16_t d) { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<int16_t>(d))); }

// The min term of centred codes for 16 sub-blocks (mins m and scales sc a byte each) in two registers:
// dmin * m - c * d * sc.
inline void k_mins(__m128i m, __m128i sc, const KScales& ks, int centre, __m256 (&mins)[2]) {
  const __m256 cd = _mm256_mul_ps(ks.d, _mm256_set1_ps(static_cast<float>(centre)));
  for (int h = 0; h < 2; ++h) {
    const __m256 mf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(h ? _mm_srli_si128(m, 8) : m));
    const __m256 sf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(h ? _mm_srli_si128(sc, 8) : sc));
    mins[h] = _mm256_fmsub_ps(mf, ks.dmin, _mm256_mul_ps(sf, cd));
  }
}

template <class F, int NR>
void gemv_k_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                 int64_t ldy, const float* residual) {
  constexpr int kValues = 256;
  constexpr int kGroups = kValues / kGroup;
  // Beyond two rows the row is taken a slice at a time, so that the slice's activations stay in L1 across the
  // weight rows (~330 bytes per row and super-block).
  constexpr int64_t kSliceBlocks = NR <= 2 ? INT64_MAX : (28 << 10) / (330 * NR);
  // Few rows: two accumulators per row keep the chains of multiply-adds short.
  constexpr int kAccs = NR <= 2 ? 2 : 1;
  const int64_t blocks = x.k / kValues;
  const int64_t groups = x.k / kGroup;
  for (int64_t j0 = 0; j0 < blocks; j0 += kSliceBlocks) {
    const int64_t j1 = blocks - j0 < kSliceBlocks ? blocks : j0 + kSliceBlocks;
    for (int64_t o = m0; o < m1; ++o) {
      const auto* b = reinterpret_cast<const typename F::Block*>(w + static_cast<size_t>(o) * row_bytes);
      __m256 acc[NR][kAccs];
      unroll<NR>([&]<int R>() {
        for (int a = 0; a < kAccs; ++a) acc[R][a] = _mm256_setzero_ps();
      });
      SlicePrefetch<sizeof(typename F::Block), weight_cache(NR)> ahead(w, row_bytes, o, j0, j1);
      for (int64_t j = j0; j < j1; ++j) {
        ahead.step();
        const F f(b[j]);
        // Weight times activation scale per row and group, read back as broadcasts (no shuffle per group and row).
        alignas(32) float ds[NR][kGroups];
        unroll<NR>([&]<int R>() {
          const __m256 dsr = _mm256_mul_ps(f.group_scales, _mm256_loadu_ps(x.d + R * groups + j * kGroups));
          _mm256_store_ps(ds[R], dsr);
          if constexpr (F::kMins && F::kGroupScales) {
            // Centred codes: each group drops c times its activation sum (the integer qsum) at the group's scale.
            const __m128i qsum = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qsum + R * groups + j * kGroups));
            const __m256 dropped = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(qsum)),
                                                 _mm256_set1_ps(static_cast<float>(F::kCentre)));
            acc[R][kAccs - 1] = _mm256_fnmadd_ps(dropped, dsr, acc[R][kAccs - 1]);
          }
          if constexpr (F::kMins) {
            const float* sum = x.sum + (R * x.k + j * kValues) / kSumGroup;
            acc[R][0] = _mm256_fnmadd_ps(f.mins[0], _mm256_loadu_ps(sum), acc[R][0]);
            acc[R][kAccs - 1] = _mm256_fnmadd_ps(f.mins[1], _mm256_loadu_ps(sum + 8), acc[R][kAccs - 1]);
          }
        });
        unroll<kGroups>([&]<int G>() {
          const __m256i wg = f.template weights<G>(b[j]);
          const __m256i magnitude = F::kSigned ? _mm256_sign_epi8(wg, wg) : wg;
          [[maybe_unused]] __m256i scale;
          if constexpr (!F::kGroupScales) scale = scale_lanes<F, G>(f.table);
          unroll<NR>([&]<int R>() {
            __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + R * x.k + j * kValues + G * kGroup));
            if constexpr (F::kSigned) xq = _mm256_sign_epi8(xq, wg);
            __m256i isum;
            if constexpr (F::kGroupScales) {
              isum = dot_unsigned(_mm256_setzero_si256(), magnitude, xq);
            } else {
              isum = scaled_dot(magnitude, xq, scale, F::kMins ? F::kCentre : 0);
            }
            __m256& into = acc[R][G % kAccs];
            into = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_broadcast_ss(&ds[R][G]), into);
          });
        });
      }
      unroll<NR>([&]<int R>() {
        const int64_t at = R * ldy + o;
        const __m256 sum = kAccs == 2 ? _mm256_add_ps(acc[R][0], acc[R][kAccs - 1]) : acc[R][0];
        const float prior = j0 > 0 ? y[at] : residual ? residual[at] : 0.0f;
        // Signed scales sit in the high byte of their words: a factor 256.
        y[at] = hsum(sum) * (F::kSignedScales && !F::kGroupScales ? 1.0f / 256 : 1.0f) + prior;
      });
    }
  }
}

template <class F>
void gemv_k(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y, int64_t ldy,
            const float* residual) {
  with_rows(x.rows, [&]<int NR>() { gemv_k_rows<F, NR>(w, row_bytes, m0, m1, x, y, ldy, residual); });
}

// Q4_K and Q5_K: eight 6-bit scales and mins in 12 bytes (see the AVX-512 kernels), unpacked with integer
// arithmetic into scales 0-7 and mins 0-7 (a byte each).
inline void k4_scales_mins(const uint8_t* s, uint64_t& scales, uint64_t& mins) {
  uint64_t b0_7;
  uint32_t b8_11;
  std::memcpy(&b0_7, s, sizeof b0_7);
  std::memcpy(&b8_11, s + 8, sizeof b8_11);
  const uint64_t top = (b0_7 >> 2) & 0x3030303030303030ull;  // bits 6-7 of bytes 0-7, at bits 4-5
  const uint64_t low = b0_7 & 0x3f3f3f3f3f3f3f3full;
  scales = (low & 0xffffffffull) | (((b8_11 & 0x0f0f0f0full) | (top & 0xffffffffull)) << 32);
  mins = (low >> 32) | ((((b8_11 >> 4) & 0x0f0f0f0full) | (top >> 32)) << 32);
}

template <class B>
struct K4Format {
  using Block = B;
  static constexpr bool kFifth = requires(const B& b) { b.qh; };
  static constexpr bool kSigned = false;
  static constexpr bool kMins = true;
  static constexpr int kCentre = kFifth ? 16 : 8;
  static constexpr bool kGroupScales = true;
  static constexpr bool kSignedScales = false;
  static constexpr int scale_pos(int) { return 0; }

  __m256 group_scales;
  __m256i table = _mm256_setzero_si256();  // unused: the scales are per group
  __m256 mins[2];
  __m256i qh;  // Q5_K only

  explicit K4Format(const Block& b) {
    uint64_t scales, m;
    k4_scales_mins(b.scales, scales, m);
    const KScales ks = k_scales(&b.d);
    group_scales = _mm256_mul_ps(
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(scales)))), ks.d);
    // One scale and min per sub-block of 16.
    const __m128i m8 = _mm_cvtsi64_si128(static_cast<long long>(m));
    const __m128i sc8 = _mm_cvtsi64_si128(static_cast<long long>(scales));
    k_mins(_mm_unpacklo_epi8(m8, m8), _mm_unpacklo_epi8(sc8, sc8), ks, kCentre, mins);
    if constexpr (kFifth) {
      qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
    } else {
      qh = _mm256_setzero_si256();
    }
  }

  // Group G: the low nibbles of 32 bytes (G even) or their high nibbles, and Q5_K's fifth bits (bit G of qh).
  template <int G>
  __m256i weights(const Block& b) const {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * (G / 2)));
    __m256i v = _mm256_and_si256(G % 2 ? _mm256_srli_epi16(q, 4) : q, _mm256_set1_epi8(0x0f));
    if constexpr (kFifth) {
      const __m256i bit = G < 4 ? _mm256_slli_epi16(qh, 4 - G) : _mm256_srli_epi16(qh, G - 4);
      v = _mm256_or_si256(v, _mm256_and_si256(bit, _mm256_set1_epi8(0x10)));
    }
    return v;
  }
};

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
