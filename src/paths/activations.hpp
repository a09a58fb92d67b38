// Activation rows prepared once per call for the kernels of one level and one weight type: quantized to int8
// in groups of 32 for the integer kernels (with the sums their corrections need), used as they are (f32) by the
// float ones. Rows can be gathered from another buffer, so that routed rows (mixture of experts) are quantized
// once and then grouped, never quantized again.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/kernels.hpp"
#include "kernels/tile.hpp"
#include "runtime/aligned.hpp"

namespace ggufmm::paths {

class ActivationBuffer {
 public:
  // Many rows are quantized on `threads` threads (0: all cores), as the products that follow are.
  ActivationBuffer(const float* x, int64_t rows, int64_t k, Type type, runtime::Isa isa, int threads = 1);
  // The given rows of `from`, in that order.
  ActivationBuffer(const ActivationBuffer& from, std::span<const int64_t> rows);

  int64_t rows() const { return rows_; }
  // Rows [r0, r0 + n) for the decode kernels (n <= kMaxRowTileRows).
  kernels::Activations view(int64_t r0 = 0, int n = 0) const;
  // All rows for the tile kernels, in groups of 16 or 32 values (integer types only).
  kernels::TileActivations tile_view(int group) const;

 private:
  void derive_tile_sums(int64_t r0, int64_t r1);

  int64_t k_ = 0, rows_ = 0;
  bool quantized_ = false;
  const float* f32_ = nullptr;  // the caller's rows, or f32_copy_
  runtime::AlignedVector<float> f32_copy_;
  runtime::AlignedVector<int8_t> q_;
  runtime::AlignedVector<float> d_, sum16_;
  runtime::AlignedVector<int16_t> qsum_;
  runtime::AlignedVector<kernels::TileGroup> tile16_, tile32_;
};

}  // namespace ggufmm::paths
