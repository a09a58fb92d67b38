#include "paths/activations.hpp"

#include <algorithm>
#include <cassert>

#include "format/registry.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

// Float weights (no int8 decoder) multiply the activations as they are.
bool is_float(Type t) { return format::find(t)->decode == nullptr; }

// Copies `per_row` elements of listed rows [i0, i1) of `from` (row 0 at `from`) into `to`, in order.
template <typename T>
void gather(const T* from, size_t per_row, std::span<const int64_t> rows, size_t i0, size_t i1, T* to) {
  for (size_t i = i0; i < i1; ++i) {
    std::copy_n(from + static_cast<size_t>(rows[i]) * per_row, per_row, to + i * per_row);
  }
}

}  // namespace

ActivationBuffer::ActivationBuffer(const float* x, int64_t rows, int64_t k, Type type, runtime::Isa isa, int threads)
    : k_(k), rows_(rows), quantized_(!is_float(type)) {
  at_.f32 = x;
  if (!quantized_) return;
  q_.resize(static_cast<size_t>(rows * k));
  d_.resize(static_cast<size_t>(rows * k / kernels::kGroup));
  qsum_.resize(d_.size());
  sum16_.resize(static_cast<size_t>(rows * k / kernels::kSumGroup));
  tile16_.resize(sum16_.size());
  tile32_.resize(d_.size());
  const kernels::QuantizeActFn quantize = kernels::find_quantize_act(isa);
  // Blocks of rows of 256 KiB to 1 MiB of values each: one for few rows, as in decoding; one a thread or more for
  // many, where 1 MiB alone would leave cores idle (512 rows of 2048 values made one block).
  const int64_t workers = runtime::ThreadPool::resolve_threads(threads);
  const int64_t row_values = std::max<int64_t>(k, 1), per_thread = (rows + workers - 1) / workers;
  const int64_t per_block = std::clamp<int64_t>(per_thread, std::max<int64_t>(1, (int64_t{1} << 18) / row_values),
                                                std::max<int64_t>(1, (int64_t{1} << 20) / row_values));
  runtime::ThreadPool::global().run(threads, (rows + per_block - 1) / per_block, [&](int64_t block) {
    const int64_t r0 = block * per_block, r1 = std::min(rows, r0 + per_block);
    quantize(x + r0 * k, static_cast<int>(r1 - r0), k, q_.data() + r0 * k, d_.data() + r0 * (k / kernels::kGroup),
             qsum_.data() + r0 * (k / kernels::kGroup), sum16_.data() + r0 * (k / kernels::kSumGroup));
    derive_tile_sums(r0, r1);
  });
  point_at_own_rows();
}

ActivationBuffer::ActivationBuffer(const ActivationBuffer& from, std::span<const int64_t> rows, int threads)
    : k_(from.k_), rows_(static_cast<int64_t>(rows.size())), quantized_(from.quantized_) {
  const auto k = static_cast<size_t>(k_), n = rows.size();
  if (quantized_) {
    q_.resize(n * k);
    d_.resize(n * k / kernels::kGroup);
    qsum_.resize(d_.size());
    sum16_.resize(n * k / kernels::kSumGroup);
    tile16_.resize(sum16_.size());
    tile32_.resize(d_.size());
  } else {
    f32_copy_.resize(n * k);
  }
  // At least 8 blocks, so that every thread copies (the rows of 32 tokens routed to 8 experts each: 1.6 MB), of
  // at most about 1 MiB of values each, as for quantizing.
  const size_t most = std::max<size_t>(1, (size_t{1} << 20) / std::max<size_t>(k, 1));
  const size_t per_block = std::clamp<size_t>(n / 8, 1, most);
  runtime::ThreadPool::global().run(threads, static_cast<int64_t>((n + per_block - 1) / per_block), [&](int64_t b) {
    const size_t i0 = static_cast<size_t>(b) * per_block, i1 = std::min(n, i0 + per_block);
    if (!quantized_) return gather(from.at_.f32, k, rows, i0, i1, f32_copy_.data());
    gather(from.at_.q, k, rows, i0, i1, q_.data());
    gather(from.at_.d, k / kernels::kGroup, rows, i0, i1, d_.data());
    gather(from.at_.qsum, k / kernels::kGroup, rows, i0, i1, qsum_.data());
    gather(from.at_.sum16, k / kernels::kSumGroup, rows, i0, i1, sum16_.data());
    gather(from.at_.tile16, k / kernels::kSumGroup, rows, i0, i1, tile16_.data());
    gather(from.at_.tile32, k / kernels::kGroup, rows, i0, i1, tile32_.data());
  });
  point_at_own_rows();
}

ActivationBuffer ActivationBuffer::slice(const ActivationBuffer& from, int64_t r0, int64_t n) {
  ActivationBuffer s;
  s.k_ = from.k_;
  s.rows_ = n;
  s.quantized_ = from.quantized_;
  if (from.map_) {
    s.at_ = from.at_;
    s.map_ = from.map_ + r0;
  } else {
    s.at_ = from.at_.row(r0, from.k_);
  }
  return s;
}

ActivationBuffer ActivationBuffer::mapped(const ActivationBuffer& from, const int64_t* at, int64_t n) {
  assert(!from.map_);
  ActivationBuffer s = slice(from, 0, n);
  s.map_ = at;
  return s;
}

ActivationBuffer::Rows ActivationBuffer::Rows::row(int64_t r, int64_t k) const {
  const auto at = [](auto* p, int64_t offset) { return p ? p + offset : p; };
  const int64_t groups = k / kernels::kGroup, halves = k / kernels::kSumGroup;
  return {at(f32, r * k),        at(q, r * k),           at(d, r * groups),     at(qsum, r * groups),
          at(sum16, r * halves), at(tile16, r * halves), at(tile32, r * groups)};
}

void ActivationBuffer::point_at_own_rows() {
  if (!f32_copy_.empty()) at_.f32 = f32_copy_.data();
  if (!quantized_) return;
  at_.q = q_.data();
  at_.d = d_.data();
  at_.qsum = qsum_.data();
  at_.sum16 = sum16_.data();
  at_.tile16 = tile16_.data();
  at_.tile32 = tile32_.data();
}

// The tile kernels work in groups of 16 or 32 values; both kinds are kept, for rows [r0, r1): -128 times the
// code sums, which seed the kernels' integer sums, the code scale, and the float sums.
void ActivationBuffer::derive_tile_sums(int64_t r0, int64_t r1) {
  const auto per_row = static_cast<size_t>(k_ / kernels::kSumGroup);
  for (size_t g = static_cast<size_t>(r0) * per_row; g < static_cast<size_t>(r1) * per_row; ++g) {
    int32_t total = 0;
    for (size_t i = 0; i < kernels::kSumGroup; ++i) total += q_[g * kernels::kSumGroup + i];
    tile16_[g] = {.bias = -128 * total, .d = d_[g / 2], .sum = sum16_[g]};
  }
  for (size_t g = static_cast<size_t>(r0) * per_row / 2; g < static_cast<size_t>(r1) * per_row / 2; ++g) {
    tile32_[g] = {.bias = tile16_[2 * g].bias + tile16_[2 * g + 1].bias,
                  .d = d_[g],
                  .sum = sum16_[2 * g] + sum16_[2 * g + 1]};
  }
}

kernels::Activations ActivationBuffer::view(int64_t r0, int n) const {
  assert(!map_);
  const Rows a = at_.row(r0, k_);
  return {.k = k_,
          .rows = n > 0 ? n : static_cast<int>(rows_ - r0),
          .f32 = a.f32,
          .q = a.q,
          .d = a.d,
          .qsum = a.qsum,
          .sum = a.sum16};
}

kernels::TileActivations ActivationBuffer::tile_view(int group) const {
  return {k_, at_.q, group == 32 ? at_.tile32 : at_.tile16, map_};
}

}  // namespace ggufmm::paths
