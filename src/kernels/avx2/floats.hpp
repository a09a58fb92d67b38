// F32, F16 and BF16 weights times f32 activations, AVX2: the weights are widened to f32 in registers and
// multiplied in f32 (no int8 anywhere), any row length (a last partial step goes through a zeroed copy).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx2/rows.hpp"
#include "kernels/kernels.hpp"
#include "kernels/level.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// How each stored type becomes 8 f32 lanes.
struct F32 {
  static constexpr size_t kBytes = 4;
  static __m256 load(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
};
struct F16 {
  static constexpr size_t kBytes = 2;
  static __m256 load(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
};
struct BF16 {
  static constexpr size_t kBytes = 2;
  static __m256 load(const uint8_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
};

template <typename Stored, int NR>
void gemv_float_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                     int64_t ldy, const float* residual) {
  for (int64_t o = m0; o < m1; ++o) {
    const uint8_t* row = w + static_cast<size_t>(o) * row_bytes;
    __m256 acc[NR][2];
    for (int r = 0; r < NR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= x.k; i += 16) {
      prefetch_ahead<16 * Stored::kBytes, weight_cache(NR)>(row + i * Stored::kBytes);
      const __m256 w0 = Stored::load(row + i * Stored::kBytes);
      const __m256 w1 = Stored::load(row + (i + 8) * Stored::kBytes);
      for (int r = 0; r < NR; ++r) {
        const float* xr = x.f32 + r * x.k + i;
        acc[r][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xr), acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xr + 8), acc[r][1]);
      }
    }
    for (; i < x.k; i += 8) {
      // The last values through zero-padded copies, so nothing past the row or the activations is read.
      const int64_t n = x.k - i < 8 ? x.k - i : 8;
      alignas(32) uint8_t wbuf[8 * Stored::kBytes] = {};
      for (int64_t b = 0; b < n * static_cast<int64_t>(Stored::kBytes); ++b) wbuf[b] = row[i * Stored::kBytes + b];
      const __m256 wv = Stored::load(wbuf);
      for (int r = 0; r < NR; ++r) {
        alignas(32) float xbuf[8] = {};
        for (int64_t l = 0; l < n; ++l) xbuf[l] = x.f32[r * x.k + i + l];
        acc[r][0] = _mm256_fmadd_ps(wv, _mm256_load_ps(xbuf), acc[r][0]);
      }
    }
    for (int r = 0; r < NR; ++r) {
      const int64_t at = r * ldy + o;
      y[at] = hsum(_mm256_add_ps(acc[r][0], acc[r][1])) + (residual ? residual[at] : 0.0f);
    }
  }
}

template <typename Stored>
void gemv_float(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                int64_t ldy, const float* residual) {
  with_rows(x.rows, [&]<int NR>() { gemv_float_rows<Stored, NR>(w, row_bytes, m0, m1, x, y, ldy, residual); });
}

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
