// The AVX2 gemv driver (compiled twice: plain AVX2, and with AVX-VNNI where the int8 dot product is one
// instruction). One weight row at a time against every activation row (1 to 7), so each weight byte is read
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

#include "kernels/kernels.hpp"
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

inline float half(uint16_t h) { return _cvtsh_ss(h); }

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

// Signed weights times signed activations: |w| times x with the sign of w moved onto x.
inline __m256i dot_signed(__m256i acc, __m256i w, __m256i xq) {
  return dot_unsigned(acc, _mm256_sign_epi8(w, w), _mm256_sign_epi8(xq, w));
}

inline __m256i load_act(const Activations& x, int r, int64_t i) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.q + r * x.k + i));
}

inline float act_scale(const Activations& x, int r, int64_t group) { return x.d[r * (x.k / kGroup) + group]; }

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
