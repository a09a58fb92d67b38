// The decode path: activations quantized once per call, then integer dot products straight against the
// blocks, weight rows split across threads so every core streams its own part of the weight.
#include <algorithm>
#include <vector>

#include "kernels/kernels.hpp"
#include "paths/paths.hpp"
#include "runtime/aligned.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

// Output columns per task: a multiple of 16 small enough that every thread gets several tasks to balance, and
// large enough that each streams a good run of weight. One activation row streams the weight, and a thread idle at
// the end idles its share of the bandwidth, so one row takes 12 tasks per thread. With more rows each task prepares
// more activations (a cost per task) and the tail matters less: 4 per thread from 3 rows on. But each task starts a
// stream of its own, which costs, so no task is smaller than kMinTaskBytes (docs/performance.md, gemv drivers).
constexpr int64_t kMinTaskBytes = 192 << 10;

int64_t columns_per_task(int64_t m, size_t row_bytes, int threads, int64_t rows) {
  const int64_t most = threads * std::max<int64_t>(4, 12 / std::max<int64_t>(rows, 1));
  const int64_t by_bytes = static_cast<int64_t>(static_cast<size_t>(m) * row_bytes / kMinTaskBytes);
  const int64_t tasks = std::clamp<int64_t>((by_bytes + threads - 1) / threads * threads, threads, most);
  const int64_t per_task = (m + tasks - 1) / tasks;
  return std::max<int64_t>(16, (per_task + 15) / 16 * 16);
}

}  // namespace

void gemv_columns(const Weight& w, const ActivationBuffer& x, int64_t m0, int64_t m1, const OutputRows& out,
                  runtime::Isa isa, int most) {
  const kernels::GemvFn kernel = kernels::find_gemv(isa, w.type);
  const auto* weight = static_cast<const uint8_t*>(w.data);
  // Balanced runs: a short run streams the weight again for few rows.
  balanced_runs(x.rows(), most, [&](int64_t r0, int rows) {
    if (!out.at) {
      const int64_t at = out.offset(r0);
      kernel(weight, w.row_bytes(), m0, m1, x.view(r0, rows), out.y + at, out.ldy,
             out.residual ? out.residual + at : nullptr);
      return out.check(r0, rows, m0, m1 - m0);
    }
    thread_local runtime::AlignedVector<float> block;
    const int64_t width = m1 - m0;
    if (block.size() < static_cast<size_t>(rows * width)) block.resize(static_cast<size_t>(rows * width));
    kernel(weight + m0 * w.row_bytes(), w.row_bytes(), 0, width, x.view(r0, rows), block.data(), width, nullptr);
    for (int r = 0; r < rows; ++r) out.put(r0 + r, m0, block.data() + r * width, width);
  });
}

void gemv_matmul(const MatmulCall& c, int most) {
  const int threads = runtime::ThreadPool::resolve_threads(c.threads);
  const int64_t per_task = columns_per_task(c.w.m, c.w.row_bytes(), threads, c.rows);
  const ActivationBuffer x(c.x, c.rows, c.w.k, c.w.type, c.isa, c.threads);
  DoubtfulRows flags(static_cast<size_t>(c.rows));
  runtime::ThreadPool::global().run(threads, (c.w.m + per_task - 1) / per_task, [&](int64_t task) {
    const int64_t m0 = task * per_task;
    gemv_columns(c.w, x, m0, std::min(c.w.m, m0 + per_task), {{c.y, c.w.m, c.residual}, &flags}, c.isa, most);
  });
  recompute_doubtful(c, &flags);
}

}  // namespace ggufmm::paths
