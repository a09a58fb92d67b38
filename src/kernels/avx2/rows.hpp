// The AVX2 row driver of gemv, gemv<F> (compiled twice: plain AVX2, and with AVX-VNNI where the int8 dot product is one
// instruction). One weight row at a time against every activation row (1 to 8), so each weight byte is read once. A
// format supplies only the step that decodes its blocks and feeds the dot products:
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

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "kernels/level.hpp"
#include "kernels/unroll.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// The sum of the 8 lanes.
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

// Activation codes [i, i + 32) of row r.
inline __m256i load_act(const Activations& x, int r, int64_t i) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + r * x.k + i));
}

// The activation scale of group `group` of row r.
inline float act_group_scale(const Activations& x, int r, int64_t group) { return x.d[r * (x.k / kGroup) + group]; }

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
