// The row loop that the SIMD levels' group gemv drivers (avx2/ and avx512/groups.hpp) share: a level supplies
// its step size, its accumulators and its layouts (which activation chunks a piece of weights meets, and the dot
// products), and this header walks weight rows over those pieces. Each level's kernel files compile their own copy.
//
// A layout supplies:
//
//   struct Layout {
//     static constexpr int kStepValues;                        // the level's step: 64 or 128 values
//     template <int W, int NR, bool kHasMin> using Acc = ...;  // the level's accumulators of W x NR
//     template <class F> static constexpr int kSteps;          // steps per piece of weights
//     using Chunk = ...;                                       // a piece of one activation row, as laid out
//     template <class F, int W, int NR>
//     static void dot(const uint8_t* p, size_t stride, const Chunk* const (&x)[NR], int64_t t,
//                     Acc<W, NR, F::kHasMin>& acc);          // piece t of W weight rows, the first at p
//   };
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/level.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// Step S from p on, p the start of a unit of a format whose steps are kStepValues long.
template <class F, int kStepValues, int S>
[[gnu::always_inline]] inline auto step_at(const uint8_t* p) {
  constexpr int kUnitSteps = F::kUnitValues / kStepValues;
  return typename F::Unit(p + S / kUnitSteps * F::kUnitBytes).template step<S % kUnitSteps>();
}

// The values and bytes of a piece of a weight row: what a layout's dot takes at once.
template <class F, class Layout>
inline constexpr int kPieceValues = Layout::template kSteps<F> * Layout::kStepValues;
template <class F, class Layout>
inline constexpr int kPieceBytes = kPieceValues<F, Layout> / F::kUnitValues * F::kUnitBytes;

// Weight rows [o, o + W) over pieces [t0, t1) (the row's last blocks, fewer than a piece, go through zero-padded
// copies whose missing blocks have zero scales and meet zero activations), added to what earlier slices left in
// y. ahead() prefetches as much as a piece of the rows reads.
template <class F, class Layout, int W, int NR, class Ahead>
inline void group_rows(const uint8_t* w, size_t row_bytes, const typename Layout::Chunk* const (&x)[NR], int64_t k,
                       int64_t t0, int64_t t1, int64_t o, float* y, int64_t ldy, const float* residual,
                       Ahead&& ahead) {
  const uint8_t* row = w + static_cast<size_t>(o) * row_bytes;
  constexpr int64_t kBlockBytes = F::kUnitBytes / (F::kUnitValues / F::kBlockValues);
  constexpr int kValues = kPieceValues<F, Layout>, kBytes = kPieceBytes<F, Layout>;
  const int64_t whole = k / kValues;
  typename Layout::template Acc<W, NR, F::kHasMin> acc;
  for (int64_t t = t0; t < std::min(t1, whole); ++t) {
    ahead();
    Layout::template dot<F, W, NR>(row + t * kBytes, row_bytes, x, t, acc);
  }
  const int64_t tail_bytes = k % kValues / F::kBlockValues * kBlockBytes;
  if (t1 > whole && tail_bytes > 0) {
    alignas(64) uint8_t padded[W][kBytes] = {};
    for (int j = 0; j < W; ++j) {
      std::memcpy(padded[j], row + j * row_bytes + whole * kBytes, static_cast<size_t>(tail_bytes));
    }
    Layout::template dot<F, W, NR>(padded[0], kBytes, x, whole, acc);
  }
  for (int j = 0; j < W; ++j) {
    for (int r = 0; r < NR; ++r) {
      const int64_t at = r * ldy + o + j;
      const float prior = t0 > 0 ? y[at] : residual ? residual[at] : 0.0f;
      y[at] = acc.total(j, r) + prior;
    }
  }
}

}  // namespace
}  // namespace ggufmm::kernels::GGUFMM_LEVEL
