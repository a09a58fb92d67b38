// The nibble driver of gemv, gemv_nibble<F>: 4-bit formats that store a group of 32 values as 16 bytes, value j
// in the low nibble of byte j and value j + 16 in its high nibble, each code indexing a table of 16 levels (IQ4_NL,
// IQ4_XS).
//
// A step is 4 groups (128 values). Their 64 code bytes fill one register transposed: dword 4L + g holds bytes
// 4L..4L+3 of group g. Masking the low nibbles then gives values of the groups' first halves, shifting the high
// ones values of their second halves, and one byte shuffle per register looks up the levels. The activations are
// laid out once per call in the same order (NibbleActs), so that each activation row costs two dot products, a
// conversion, a multiplication and a multiply-add per step, with no shuffles; and since every 128-bit lane holds
// one dword of each group, per-group factors are 4 values repeated in every lane: a broadcast load.
//
// The table holds the levels plus a bias that makes them unsigned for the u8 x s8 dot product; the bias times
// the group's activation code sum is taken off by seeding the integer sums (NibbleParams::bias).
//
// Long weight rows are taken two per pass (paired_rows), so that each activation load serves both, and the weight
// is prefetched well ahead (x86/iq4.hpp) by a cursor that moves with the units read. A format supplies:
//
//   struct Format {
//     static constexpr int kUnitValues;  // values per unit: a multiple of 128 (a super-block, or 4 blocks)
//     static constexpr int kUnitBytes;
//     static constexpr int8_t kLevels[16];
//     static constexpr int kBias;        // added to every level (a multiple of 4): see biased_table
//     static constexpr int kSteps = kUnitValues / 128;
//     static void decode(const uint8_t* row, int64_t u, NibbleWeights (&w)[kSteps]);  // unit u of a row
//     // Only where a row may end inside a unit: `groups` (1 to kUnitValues / 32 - 1) of unit u are left.
//     static void decode_tail(const uint8_t* row, int64_t u, int groups, NibbleWeights (&w)[kSteps]);
//   };
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "kernels/avx512/loads.hpp"
#include "kernels/avx512/row_sums.hpp"
#include "kernels/kernels.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"
#include "kernels/x86/iq4.hpp"

// GCC 12 reports the deliberately undefined lanes of its own AVX-512 intrinsics (_mm512_undefined_*) as
// uninitialized once they are inlined into these large functions: a false positive.
// (GCC checks this when it compiles the functions, after the whole file: the setting cannot be popped here.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ggufmm::kernels::avx512 {
namespace {

constexpr int kNibbleStepValues = 128;  // four groups of 32

// One step of one weight row.
struct NibbleWeights {
  __m512i codes;  // transposed: dword 4L + g holds code bytes 4L..4L+3 of group g
  __m512 scale;   // element 4L + g: the weight scale of group g
};

// The per-group factors of one activation step.
struct alignas(32) NibbleParams {
  int32_t bias[4];  // -(kBias / 4) * the group's code sum: its 4 lanes sum to -kBias * sum
  float scale[4];   // the group's activation scale
};

// Every activation row of a call, transposed as the weights (values 0-15 of each group in `lo`, 16-31 in `hi`);
// groups past the end of the row are zero.
class NibbleActs {
 public:
  NibbleActs(const Activations& x, int bias) : steps_((x.k + kNibbleStepValues - 1) / kNibbleStepValues) {
    const auto n = static_cast<size_t>(x.rows * steps_);
    q_ = new QStep[n];
    params_ = new NibbleParams[n];
    const int64_t groups = x.k / kGroup;
    // Element 4L + g of lo takes dword 8g + L of the step's 32 (values 4L.. of group g), hi dword 8g + 4 + L.
    const __m512i lo = _mm512_set_epi32(27, 19, 11, 3, 26, 18, 10, 2, 25, 17, 9, 1, 24, 16, 8, 0);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(4));
    for (int r = 0; r < x.rows; ++r) {
      for (int64_t t = 0; t < steps_; ++t) {
        const int64_t left = x.k - t * kNibbleStepValues;  // a multiple of 32
        const int8_t* q = x.q + r * x.k + t * kNibbleStepValues;
        const __m512i a = _mm512_maskz_loadu_epi8(prefix_mask(left), q);
        const __m512i b = _mm512_maskz_loadu_epi8(prefix_mask(left - 64), q + 64);
        QStep& s = q_[r * steps_ + t];
        _mm512_store_si512(s.lo, _mm512_permutex2var_epi32(a, lo, b));
        _mm512_store_si512(s.hi, _mm512_permutex2var_epi32(a, hi, b));
        NibbleParams& p = params_[r * steps_ + t];
        for (int g = 0; g < 4; ++g) {
          const int64_t at = r * groups + t * 4 + g;
          const bool valid = t * 4 + g < groups;
          p.bias[g] = valid ? -(bias / 4) * x.qsum[at] : 0;
          p.scale[g] = valid ? x.d[at] : 0.0f;
        }
      }
    }
  }
  ~NibbleActs() {
    delete[] q_;
    delete[] params_;
  }
  NibbleActs(const NibbleActs&) = delete;
  NibbleActs& operator=(const NibbleActs&) = delete;

  // Step t of activation row r.
  const int8_t* lo(int r, int64_t t) const { return q_[r * steps_ + t].lo; }
  const int8_t* hi(int r, int64_t t) const { return q_[r * steps_ + t].hi; }
  const NibbleParams& params(int r, int64_t t) const { return params_[r * steps_ + t]; }

 private:
  struct alignas(64) QStep {
    int8_t lo[64];
    int8_t hi[64];
  };

  int64_t steps_;
  QStep* q_;
  NibbleParams* params_;
};

// The 16 levels plus a bias, as unsigned bytes in every 128-bit lane.
inline __m512i biased_table(const int8_t (&levels)[16], int bias) {
  const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(levels));
  return _mm512_broadcast_i32x4(_mm_add_epi8(l, _mm_set1_epi8(static_cast<char>(bias))));
}

// Accumulates step S of a unit of W weight rows against every activation row; t is the step's index in the row.
template <int NR, int W, int S, int Steps>
inline void dot_nibble_step(__m512i table, const NibbleWeights (&w)[W][Steps], const NibbleActs& x, int64_t t,
                            __m512 (&acc)[W][NR]) {
  const __m512i low = _mm512_set1_epi8(0x0f);
  __m512i lo[W], hi[W];
  #pragma GCC unroll 8
  for (int i = 0; i < W; ++i) {
    lo[i] = _mm512_shuffle_epi8(table, _mm512_and_si512(w[i][S].codes, low));
    hi[i] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(w[i][S].codes, 4), low));
  }
  #pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
    const NibbleParams& p = x.params(r, t);
    const __m512i bias = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(p.bias)));
    const __m512 scale = _mm512_broadcast_f32x4(_mm_load_ps(p.scale));
    const __m512i xlo = _mm512_load_si512(x.lo(r, t));
    const __m512i xhi = _mm512_load_si512(x.hi(r, t));
    #pragma GCC unroll 8
    for (int i = 0; i < W; ++i) {
      const __m512i isum = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(bias, lo[i], xlo), hi[i], xhi);
      acc[i][r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(w[i][S].scale, scale), acc[i][r]);
    }
  }
}

// Steps S... of unit u of W weight rows, rows row_bytes apart from `row`; Tail: the row ends inside the unit.
template <class F, int NR, int W, bool Tail = false, int... S>
inline void dot_nibble_unit(__m512i table, const uint8_t* row, size_t row_bytes, int64_t u, int groups,
                            const NibbleActs& x, __m512 (&acc)[W][NR], std::integer_sequence<int, S...>) {
  NibbleWeights w[W][sizeof...(S)];
  #pragma GCC unroll 8
  for (int i = 0; i < W; ++i) {
    if constexpr (Tail) {
      F::decode_tail(row + i * row_bytes, u, groups, w[i]);
    } else {
      F::decode(row + i * row_bytes, u, w[i]);
    }
  }
  (dot_nibble_step<NR, W, S>(table, w, x, u * static_cast<int64_t>(sizeof...(S)) + S, acc), ...);
}

// Outputs o to o + W - 1, from W consecutive weight rows, handed to `sums`. The accumulators live here, in
// registers.
template <class F, int NR, int W>
void gemv_nibble_pass(const uint8_t* w, size_t row_bytes, int64_t o, const NibbleActs& x, int64_t k,
                      RowSums<NR>& sums) {
  constexpr auto kSteps = std::make_integer_sequence<int, F::kUnitValues / kNibbleStepValues>();
  const __m512i table = biased_table(F::kLevels, F::kBias);
  const uint8_t* row = w + static_cast<size_t>(o) * row_bytes;
  __m512 acc[W][NR];
  #pragma GCC unroll 8
  for (int i = 0; i < W; ++i) {
    #pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) acc[i][r] = _mm512_setzero_ps();
  }
  const int64_t units = k / F::kUnitValues;
  SlicePrefetch<F::kUnitBytes, Cache::L2, W, kIQ4PrefetchDistance> ahead(w, row_bytes, o, 0,
                                                                          std::max<int64_t>(units, 1));
  for (int64_t u = 0; u < units; ++u) {
    ahead.step();
    dot_nibble_unit<F, NR, W>(table, row, row_bytes, u, 0, x, acc, kSteps);
  }
  if constexpr (requires(NibbleWeights (&ws)[1]) { F::decode_tail(row, units, 1, ws); }) {
    if (const int groups = static_cast<int>(k % F::kUnitValues / kGroup); groups > 0) {
      dot_nibble_unit<F, NR, W, true>(table, row, row_bytes, units, groups, x, acc, kSteps);
    }
  }
  for (int i = 0; i < W; ++i) sums.put(o + i, acc[i]);
}

template <class F, int NR>
void gemv_nibble_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const NibbleActs& x, int64_t k,
                      float* y, int64_t ldy, const float* residual) {
  RowSums<NR> sums(y, ldy, residual);
  paired_rows<true>(m0, m1, row_bytes,
                    [&]<int W>(int64_t o) { gemv_nibble_pass<F, NR, W>(w, row_bytes, o, x, k, sums); });
  sums.flush();
}

template <class F>
void gemv_nibble(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                 int64_t ldy, const float* residual) {
  static_assert(F::kUnitValues % kNibbleStepValues == 0 && F::kBias % 4 == 0);
  const NibbleActs acts(x, F::kBias);
  with_rows(x.rows, [&]<int NR>() { gemv_nibble_rows<F, NR>(w, row_bytes, m0, m1, acts, x.k, y, ldy, residual); });
}

}  // namespace
}  // namespace ggufmm::kernels::avx512
