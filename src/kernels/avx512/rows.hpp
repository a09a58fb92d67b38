// The AVX-512 row driver of gemv, gemv<F>: one weight row at a time against every activation row (1 to 8), so each
// weight byte is read once. A format supplies only the step that decodes its blocks and feeds the dot products:
//
//   struct Format {
//     static constexpr int kBlockValues;    // values per block: 32 or 256
//     static constexpr int kBlocksPerStep;  // blocks per full step: 2 for 32-value blocks (one 512-bit register)
//                                           // and for codebook blocks decoded ahead (Grid8Step), else 1
//     template <int NR, int Blocks>
//     static void step(const uint8_t* row, int64_t i, const Activations& x, __m512 (&acc)[NR]);
//   };
//
// where `i` is the index of the step's first value in the row; a row whose block count is odd ends with a step
// of one block. Lives in an anonymous namespace: each kernel file gets its own copy, compiled for this level.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx512/row_sums.hpp"
#include "kernels/kernels.hpp"
#include "kernels/unroll.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

template <class F, int NR>
void gemv_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
               int64_t ldy, const float* residual) {
  RowSums<NR> sums(y, ldy, residual);
  for (int64_t o = m0; o < m1; ++o) {
    const uint8_t* row = w + static_cast<size_t>(o) * row_bytes;
    __m512 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
    constexpr int kStep = F::kBlockValues * F::kBlocksPerStep;
    int64_t i = 0;
    for (; i + kStep <= x.k; i += kStep) F::template step<NR, F::kBlocksPerStep>(row, i, x, acc);
    if constexpr (F::kBlocksPerStep > 1) {
      for (; i < x.k; i += F::kBlockValues) F::template step<NR, 1>(row, i, x, acc);
    }
    sums.put(o, acc);
  }
  sums.flush();
}

template <class F>
void gemv(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y, int64_t ldy,
          const float* residual) {
  with_rows(x.rows, [&]<int NR>() { gemv_rows<F, NR>(w, row_bytes, m0, m1, x, y, ldy, residual); });
}

}  // namespace
}  // namespace ggufmm::kernels::avx512
