// The decode path: activations quantized once per call, then integer dot products straight against the
// blocks, weight rows split across threads so every core streams its own part of the weight.
#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"
#include "paths/paths.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

// Output columns per task: a multiple of 16 small enough that every thread gets several tasks to balance.
int64_t columns_per_task(int64_t m, int threads) {
  const int64_t per_task = (m + 4 * threads - 1) / (4 * threads);
  return std::max<int64_t>(16, (per_task + 15) / 16 * 16);
}

}  // namespace

ActivationBuffer::ActivationBuffer(const float* x, int rows, int64_t k, Type type, runtime::Isa isa) {
  view_ = {.k = k, .rows = rows, .f32 = x};
  if (type == Type::F32 || type == Type::F16 || type == Type::BF16) return;
  q_.resize(static_cast<size_t>(rows * k));
  d_.resize(static_cast<size_t>(rows * k / kernels::kGroup));
  qsum_.resize(d_.size());
  sum_.resize(static_cast<size_t>(rows * k / kernels::kSumGroup));
  kernels::find_quantize_act(isa)(x, rows, k, q_.data(), d_.data(), qsum_.data(), sum_.data());
  view_.q = q_.data();
  view_.d = d_.data();
  view_.qsum = qsum_.data();
  view_.sum = sum_.data();
}

void gemv_matmul(const MatmulCall& c) {
  const runtime::Isa isa = runtime::active_isa();
  const kernels::GemvFn kernel = kernels::find_gemv(isa, c.w.type);
  const int threads = runtime::ThreadPool::resolve_threads(c.threads);
  const int64_t per_task = columns_per_task(c.w.m, threads);
  const int64_t tasks = (c.w.m + per_task - 1) / per_task;
  const auto* w = static_cast<const uint8_t*>(c.w.data);
  // More rows than the decode regime holds are taken a slice of up to kMaxGemvRows at a time.
  for (int64_t r0 = 0; r0 < c.rows; r0 += kernels::kMaxGemvRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kernels::kMaxGemvRows, c.rows - r0));
    const ActivationBuffer x(c.x + r0 * c.w.k, rows, c.w.k, c.w.type, isa);
    float* y = c.y + r0 * c.w.m;
    const float* residual = c.residual ? c.residual + r0 * c.w.m : nullptr;
    runtime::ThreadPool::global().run(threads, tasks, [&](int64_t task) {
      const int64_t m0 = task * per_task;
      kernel(w, c.w.row_bytes(), m0, std::min(c.w.m, m0 + per_task), x.view(), y, c.w.m, residual);
    });
  }
}

}  // namespace ggufmm::paths
