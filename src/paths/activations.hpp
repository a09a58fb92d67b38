// Activation rows prepared once per call for the kernels of one level and one weight type: quantized to int8
// in groups of 32 for the integer kernels (with the sums their corrections need), used as they are (f32) by the
// float ones. Routed rows (mixture of experts) are quantized once, then read where they are through a row map
// (the tile kernels), or gathered from that buffer in one pass and taken as slices (the decode kernels).
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
  // The given rows of `from`, in that order, gathered on `threads` threads (0: all cores).
  ActivationBuffer(const ActivationBuffer& from, std::span<const int64_t> rows, int threads = 1);
  // Rows [r0, r0 + n) of `from`, which must outlive the slice: nothing is copied.
  static ActivationBuffer slice(const ActivationBuffer& from, int64_t r0, int64_t n);
  // Rows at[0], ..., at[n - 1] of `from`, which must outlive the view, as `at` must: nothing is copied. Only the
  // tile kernels read rows through such a map (tile_view); view() needs rows in order.
  static ActivationBuffer mapped(const ActivationBuffer& from, const int64_t* at, int64_t n);

  // Owned rows are pointed into: moved, never copied.
  ActivationBuffer(ActivationBuffer&&) = default;
  ActivationBuffer& operator=(ActivationBuffer&&) = default;
  ActivationBuffer(const ActivationBuffer&) = delete;
  ActivationBuffer& operator=(const ActivationBuffer&) = delete;

  int64_t rows() const { return rows_; }
  // Rows [r0, r0 + n) for the decode kernels (n <= kMaxRowTileRows); not of a mapped buffer.
  kernels::Activations view(int64_t r0 = 0, int n = 0) const;
  // All rows for the tile kernels, in groups of 16 or 32 values (integer types only).
  kernels::TileActivations tile_view(int group) const;

 private:
  ActivationBuffer() = default;
  void derive_tile_sums(int64_t r0, int64_t r1);
  // Points row 0 at the rows this buffer owns.
  void point_at_own_rows();

  // Where row 0's values, scales and sums lie: in this buffer's vectors, or another's for a slice (f32: the
  // caller's rows, f32_copy_, or another's).
  struct Rows {
    const float* f32 = nullptr;
    const int8_t* q = nullptr;
    const float* d = nullptr;
    const int16_t* qsum = nullptr;
    const float* sum16 = nullptr;
    const kernels::TileGroup* tile16 = nullptr;
    const kernels::TileGroup* tile32 = nullptr;

    // The same for row r, rows of k values (absent ones stay absent).
    Rows row(int64_t r, int64_t k) const;
  };

  int64_t k_ = 0, rows_ = 0;
  bool quantized_ = false;
  Rows at_;
  const int64_t* map_ = nullptr;  // row r is row map_[r] from at_; null: row r
  runtime::AlignedVector<float> f32_copy_;
  runtime::AlignedVector<int8_t> q_;
  runtime::AlignedVector<float> d_, sum16_;
  runtime::AlignedVector<int16_t> qsum_;
  runtime::AlignedVector<kernels::TileGroup> tile16_, tile32_;
};

}  // namespace ggufmm::paths
