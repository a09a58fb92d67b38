#include "paths/activations.hpp"

#include <algorithm>

#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

bool is_float(Type t) { return t == Type::F32 || t == Type::F16 || t == Type::BF16; }

// Copies `per_row` elements of each listed row of `from` into `to`, in order.
template <typename Vector>
void gather(const Vector& from, size_t per_row, std::span<const int64_t> rows, Vector& to) {
  to.resize(rows.size() * per_row);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::copy_n(from.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(rows[i]) * per_row), per_row,
                to.begin() + static_cast<ptrdiff_t>(i * per_row));
  }
}

}  // namespace

ActivationBuffer::ActivationBuffer(const float* x, int64_t rows, int64_t k, Type type, runtime::Isa isa, int threads)
    : k_(k), rows_(rows), quantized_(!is_float(type)), f32_(x) {
  if (!quantized_) return;
  q_.resize(static_cast<size_t>(rows * k));
  d_.resize(static_cast<size_t>(rows * k / kernels::kGroup));
  qsum_.resize(d_.size());
  sum16_.resize(static_cast<size_t>(rows * k / kernels::kSumGroup));
  tile16_.resize(sum16_.size());
  tile32_.resize(d_.size());
  const kernels::QuantizeActFn quantize = kernels::find_quantize_act(isa);
  // Blocks of rows of about 1 MiB of values each (one block for few rows, as in decoding).
  const int64_t per_block = std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(k, 1));
  runtime::ThreadPool::global().run(threads, (rows + per_block - 1) / per_block, [&](int64_t block) {
    const int64_t r0 = block * per_block, r1 = std::min(rows, r0 + per_block);
    quantize(x + r0 * k, static_cast<int>(r1 - r0), k, q_.data() + r0 * k, d_.data() + r0 * (k / kernels::kGroup),
             qsum_.data() + r0 * (k / kernels::kGroup), sum16_.data() + r0 * (k / kernels::kSumGroup));
    derive_tile_sums(r0, r1);
  });
}

ActivationBuffer::ActivationBuffer(const ActivationBuffer& from, std::span<const int64_t> rows)
    : k_(from.k_), rows_(static_cast<int64_t>(rows.size())), quantized_(from.quantized_) {
  const auto k = static_cast<size_t>(k_);
  if (!quantized_) {
    f32_copy_.resize(rows.size() * k);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::copy_n(from.f32_ + static_cast<size_t>(rows[i]) * k, k, f32_copy_.begin() + static_cast<ptrdiff_t>(i * k));
    }
    f32_ = f32_copy_.data();
    return;
  }
  gather(from.q_, k, rows, q_);
  gather(from.d_, k / kernels::kGroup, rows, d_);
  gather(from.qsum_, k / kernels::kGroup, rows, qsum_);
  gather(from.sum16_, k / kernels::kSumGroup, rows, sum16_);
  gather(from.tile16_, k / kernels::kSumGroup, rows, tile16_);
  gather(from.tile32_, k / kernels::kGroup, rows, tile32_);
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
  const int rows = n > 0 ? n : static_cast<int>(rows_ - r0);
  kernels::Activations v{.k = k_, .rows = rows, .f32 = f32_ + r0 * k_};
  if (!quantized_) return v;
  v.q = q_.data() + r0 * k_;
  v.d = d_.data() + r0 * (k_ / kernels::kGroup);
  v.qsum = qsum_.data() + r0 * (k_ / kernels::kGroup);
  v.sum = sum16_.data() + r0 * (k_ / kernels::kSumGroup);
  return v;
}

kernels::TileActivations ActivationBuffer::tile_view(int group) const {
  return {k_, q_.data(), group == 32 ? tile32_.data() : tile16_.data()};
}

}  // namespace ggufmm::paths
