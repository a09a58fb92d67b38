// The AVX2 gemv driver (compiled twice: plain AVX2, and with AVX-VNNI where the int8 dot product is one
// instruction). One weight row at a time against every activation row (1 to 8), so each weight byte is read
// once. A format supplies only the step that decodes its blocks and feeds the dot products:
//
//   struct Format {
//     static constexpr int kValues;  // values per step: 32, or 256 for the super-block formats
//     template <int NR>
//     static void step(const uint8_t* row, int64_t i, const Activations& x, __m256 (&acc)[NR]);
//   };
//
// where `i` is the index of the step's first value in the row. Lives in an anonymous namespace inside the
// level's own namespace: each kernel file gets its own copy, compiled for its level only.
#pragma once

#include <immintrin.h>

#include <cstring>
#include <utility>

#include "kernels/kernels.hpp"
#include "kernels/x86/common.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"
#include "kernels/level.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

template <class F, int NR>
void gemv_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
               int64_t ldy, const float* residual) {
  for (int64_t o = m0; o < m1; ++o) {
    const uint8_t* row = w + static_cast<size_t>(o) * row_bytes;
    __m256 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm256_setzero_ps();
    for (int64_t i = 0; i < x.k; i += F::kValues) F::template step<NR>(row, i, x, acc);
    for (int r = 0; r < NR; ++r) {
      const int64_t at = r * ldy + o;
      y[at] = hsum(acc[r]) + (residual ? residual[at] : 0.0f);
    }
  }
}

template <class F>
void gemv(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y, int64_t ldy,
          const float* residual) {
  with_rows(x.rows, [&]<int NR>() { gemv_rows<F, NR>(w, row_bytes, m0, m1, x, y, ldy, residual); });
}

// Sums of 4 products of unsigned weight bytes and signed activation bytes, in 8 int32 lanes, added to acc.
inline __m256i dot_unsigned(__m256i acc, __m256i w_u8, __m256i xq) {
#if defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(acc, w_u8, xq);
#else
  // Pairs of u8 x s8 products fit int16 as long as the weight bytes stay at or below 128.
  const __m256i pairs = _mm256_maddubs_epi16(w_u8, xq);
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
#endif
}

inline __m256i load_act(const Activations& x, int r, int64_t i) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + r * x.k + i));
}

inline float act_scale(const Activations& x, int r, int64_t group) { return x.d[r * (x.k / kGroup) + group]; }

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// +1 or -1 per byte from 32 sign bits (bit j set: byte j negative), as the second operand of _mm256_sign_epi8.
inline __m256i plus_minus_one(uint32_t bits) {
  const __m256i byte_of_bit = _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303);
  const __m256i each = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), byte_of_bit);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(each, bit), bit), _mm256_set1_epi8(1));
}

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// Codebook formats whose grid words hold 8 values (IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M): 256-value blocks of
// 32 runs of 8, each run one whole grid word. A step decodes a block one group of 32 (4 runs, one register) at a
// time and feeds it to every activation row. The weight bytes take one of three forms:
enum class Grid8Form {
  Signed,       // |q| and a +-1 per value, moved onto the activations
  RunOffset,    // q + kOffset >= 0: the dot product drops kOffset times the activation sum of each lane
  GroupOffset,  // q + o_g >= 0 for an offset o_g per group: the row drops o_g times the group's qsum
};
// A format supplies the decoding of one block:
//
//   struct Codes {
//     using Block = ...;
//     static constexpr Grid8Form kForm;
//     static constexpr int kOffset;              // RunOffset only
//     static constexpr int kScaleValues;         // values per weight scale: 16 or 32
//     explicit Codes(const Block& b);            // or, given a type Scratch, Codes(const Block&, Scratch&)
//     __m256i weights(int g) const;              // group g as unsigned bytes
//     __m256i signs(int g) const;                // Signed only: +1 or -1 per value
//     __m256 scales() const;                     // per group: the float weight scale (32), or the unit (16)
//     __m256i half_scales(int g) const;          // 16 only: lanes 0-3 and 4-7 the odd integer scales of the
//                                                // group's two halves, as scale_words() makes them
//     __m256 offsets() const;                    // GroupOffset only: -o_g per group
//   };

// The grid words of 4 runs, whole, by their indices: four loads (measured faster than a gather, even where
// gathers are quick, and much faster on AMD cores before Zen 4 where they are microcoded).
template <class Index>
inline __m256i grid_runs(const uint64_t* grid, const Index* index) {
  return _mm256_setr_epi64x(static_cast<long long>(grid[index[0]]), static_cast<long long>(grid[index[1]]),
                            static_cast<long long>(grid[index[2]]), static_cast<long long>(grid[index[3]]));
}

// The grid words of a group of a codebook with 4 values per word (IQ3_XXS, IQ3_S), index(j) being word j's:
// scalar loads, for the same reason.
template <class Index>
inline __m256i grid_words(const uint32_t* grid, Index index) {
  const auto word = [&](int j) { return static_cast<int>(grid[index(j)]); };
  return _mm256_setr_epi32(word(0), word(1), word(2), word(3), word(4), word(5), word(6), word(7));
}

// High index bits of 8 runs, `bits` wide, from the word of 32 bits whose consecutive fields they are (run j at bit
// shift[j]), joined under their 8 low bytes (at `low`): dword indices, stored where the scalar grid loads read them.
inline void store_indices(uint32_t* out, const uint8_t* low, uint32_t word, __m256i shift, int bits) {
  const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(word)), shift),
                                        _mm256_set1_epi32((1 << bits) - 1));
  const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(low)));
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), _mm256_or_si256(lo, _mm256_slli_epi32(high, 8)));
}

// Odd integer scales (< 2^15, one per lane) in the form scaled_dot multiplies by.
inline __m256i scale_words(__m256i odd) {
#if defined(__AVXVNNI__)
  return odd;  // times a 4-product sum held in the low word (the high word is its sign)
#else
  return _mm256_or_si256(odd, _mm256_slli_epi32(odd, 16));  // times each of the two 2-product sums
#endif
}

// Per lane: the sum of 4 products of unsigned weight bytes and signed activation bytes, less `offset` times the
// 4 activations, times the lane's scale (from scale_words). Valid while such a 4-product sum fits int16.
inline __m256i scaled_dot(__m256i w_u8, __m256i xq, __m256i scale, int offset = 0) {
#if defined(__AVXVNNI__)
  __m256i dot = _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), w_u8, xq);
  if (offset) dot = _mm256_sub_epi32(dot, _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(static_cast<char>(offset)), xq));
#else
  __m256i dot = _mm256_maddubs_epi16(w_u8, xq);
  if (offset) dot = _mm256_sub_epi16(dot, _mm256_maddubs_epi16(_mm256_set1_epi8(static_cast<char>(offset)), xq));
#endif
  return _mm256_madd_epi16(dot, scale);
}

// 16 scales of 4 bits (two per byte, low nibble first) as odd integers 2s + 1: halves 0-7, then 8-15.
inline void odd_nibble_scales(const uint8_t* scales, __m256i (&odd)[2]) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales));
  const __m128i s = _mm_and_si128(_mm_unpacklo_epi8(b, _mm_srli_epi16(b, 4)), _mm_set1_epi8(0x0f));
  const __m128i odd8 = _mm_or_si128(_mm_add_epi8(s, s), _mm_set1_epi8(1));
  odd[0] = scale_words(_mm256_cvtepu8_epi32(odd8));
  odd[1] = scale_words(_mm256_cvtepu8_epi32(_mm_srli_si128(odd8, 8)));
}

// Lanes 0-3: half 2g of the 16 in `halves` (from odd_nibble_scales), lanes 4-7: half 2g + 1.
inline __m256i group_halves(const __m256i (&halves)[2], int g) {
  const int h = 2 * (g % 4);
  return _mm256_permutevar8x32_epi32(halves[g / 4], _mm256_setr_epi32(h, h, h, h, h + 1, h + 1, h + 1, h + 1));
}

template <class Codes>
struct Grid8Step {
  static constexpr int kValues = 256;
  static constexpr int kGroups = kValues / kGroup;
  static constexpr bool kPerGroup = Codes::kScaleValues == 32;
  static_assert(kPerGroup || Codes::kScaleValues == 16);
  static_assert(kPerGroup || Codes::kForm != Grid8Form::GroupOffset);

  template <int G>
  static __m256i dot(const Codes& c, __m256i w, __m256i sign, __m256i xq) {
    if constexpr (Codes::kForm == Grid8Form::Signed) xq = _mm256_sign_epi8(xq, sign);
    if constexpr (kPerGroup) {
      return dot_unsigned(_mm256_setzero_si256(), w, xq);
    } else if constexpr (Codes::kForm == Grid8Form::RunOffset) {
      return scaled_dot(w, xq, c.half_scales(G), Codes::kOffset);
    } else {
      return scaled_dot(w, xq, c.half_scales(G));
    }
  }

  template <int NR>
  static void step(const uint8_t* row, int64_t i, const Activations& x, __m256 (&acc)[NR]) {
    const auto& block = reinterpret_cast<const typename Codes::Block*>(row)[i / kValues];
    prefetch_ahead<sizeof block, weight_cache(NR)>(&block);
    // A format may ask for memory to decode into (Codes::Scratch: grid indices for scalar loads, sign bits), kept
    // apart from the decoded block so that the block's other fields stay in registers.
    if constexpr (requires { typename Codes::Scratch; }) {
      typename Codes::Scratch scratch;
      rows<NR>(Codes(block, scratch), i, x, acc);
    } else {
      rows<NR>(Codes(block), i, x, acc);
    }
  }

  template <int NR>
  static void rows(const Codes& c, int64_t i, const Activations& x, __m256 (&acc)[NR]) {
    // Weight times activation scale per row and group, read back as broadcasts (no shuffle per group and row).
    alignas(32) float ds[NR][kGroups];
    const __m256 ws = c.scales();
    for (int r = 0; r < NR; ++r) {
      const __m256 s = _mm256_mul_ps(ws, _mm256_loadu_ps(x.d + r * (x.k / kGroup) + i / kGroup));
      _mm256_store_ps(ds[r], s);
      if constexpr (Codes::kForm == Grid8Form::GroupOffset) {
        const __m128i qsum = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x.qsum + r * (x.k / kGroup) + i / kGroup));
        acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(qsum)), c.offsets()), s, acc[r]);
      }
    }
    unroll<kGroups>([&]<int G>() {
      const __m256i w = c.weights(G);
      __m256i sign = _mm256_setzero_si256();
      if constexpr (Codes::kForm == Grid8Form::Signed) sign = c.signs(G);
      for (int r = 0; r < NR; ++r) {
        const __m256i isum = dot<G>(c, w, sign, load_act(x, r, i + kGroup * G));
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_broadcast_ss(&ds[r][G]), acc[r]);
      }
    });
  }
};

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// ---- K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K): 256-value super-blocks whose sub-blocks of 16 or 32 carry small
// integer scales. A super-block is taken one group of 32 values (one register) at a time: its weight bytes are
// decoded once for all activation rows, and each row adds one integer dot product, scaled per sub-block of 16 in
// the integer domain (scaled_dot) where the format's scales are per 16, then one float multiply-add by the group's
// scale. Formats whose scales are per 32 (Q4_K, Q5_K) fold their scale into that float instead. Asymmetric formats
// multiply centred codes q - c (c the middle code, keeping the int16 partial sums small) and subtract
// (dmin * m - c * d * sc) times the activation sums.
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
// ---- end of the K-quants

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// The sign words of IQ2_XXS and IQ3_XXS (four runs of 7 sign bits in bits 0-27 of each 32-bit word, the scale on
// top) as one byte of 8 signs per run, run k of a word in its byte k, the eighth sign completed by complete_signs.
inline __m256i seven_bit_sign_runs(__m256i words) {
  // Runs 2-3 move up 2 bits into the upper half, then runs 1 and 3 up 1 bit within their half.
  const __m256i halves = _mm256_blend_epi16(words, _mm256_slli_epi32(words, 2), 0xaa);
  const __m256i runs = _mm256_or_si256(_mm256_and_si256(halves, _mm256_set1_epi16(0x007f)),
                                       _mm256_and_si256(_mm256_slli_epi16(halves, 1), _mm256_set1_epi16(0x7f00)));
  return complete_signs(runs);
}

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
