// F32, F16 and BF16 weights times f32 activations, AVX-512: the weights are widened to f32 in registers and
// multiplied in f32 (no int8 anywhere), any row length (a masked step ends the row).
#pragma once

#include <immintrin.h>

#include "kernels/avx512/row_sums.hpp"
#include "kernels/kernels.hpp"
#include "kernels/prefetch.hpp"
#include "kernels/unroll.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// How each stored type becomes 16 f32 lanes (masked-off lanes read nothing and give 0).
struct F32 {
  static constexpr size_t kBytes = 4;
  static __m512 load(const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};
struct F16 {
  static constexpr size_t kBytes = 2;
  static __m512 load(const uint8_t* p, __mmask16 m) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
};
struct BF16 {
  static constexpr size_t kBytes = 2;
  static __m512 load(const uint8_t* p, __mmask16 m) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
  }
};

template <typename Stored, int NR>
void gemv_float_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                     int64_t ldy, const float* residual) {
  RowSums<NR> sums(y, ldy, residual);
  for (int64_t o = m0; o < m1; ++o) {
    const uint8_t* row = w + static_cast<size_t>(o) * row_bytes;
    __m512 acc[NR][2];
    for (int r = 0; r < NR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    int64_t i = 0;
    // Two independent accumulators per row hide the FMA latency.
    for (; i + 32 <= x.k; i += 32) {
      prefetch_ahead<32 * Stored::kBytes, weight_cache(NR)>(row + i * Stored::kBytes);
      const __m512 w0 = Stored::load(row + i * Stored::kBytes, 0xffff);
      const __m512 w1 = Stored::load(row + (i + 16) * Stored::kBytes, 0xffff);
      for (int r = 0; r < NR; ++r) {
        const float* xr = x.f32 + r * x.k + i;
        acc[r][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(xr), acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(xr + 16), acc[r][1]);
      }
    }
    for (; i < x.k; i += 16) {
      const int64_t left = x.k - i;
      const __mmask16 m = left >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << left) - 1);
      const __m512 wv = Stored::load(row + i * Stored::kBytes, m);
      for (int r = 0; r < NR; ++r) {
        acc[r][0] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x.f32 + r * x.k + i), acc[r][0]);
      }
    }
    __m512 total[NR];
    for (int r = 0; r < NR; ++r) total[r] = _mm512_add_ps(acc[r][0], acc[r][1]);
    sums.put(o, total);
  }
  sums.flush();
}

template <typename Stored>
void gemv_float(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
                int64_t ldy, const float* residual) {
  with_rows(x.rows, [&]<int NR>() { gemv_float_rows<Stored, NR>(w, row_bytes, m0, m1, x, y, ldy, residual); });
}

}  // namespace
}  // namespace ggufmm::kernels::avx512
