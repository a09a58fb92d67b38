#include <algorithm>
#include <vector>

#include "format/registry.hpp"
#include "paths/paths.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

// Output columns handed to a task at a time: enough to amortize scheduling, small enough to balance.
constexpr int64_t kColumnsPerTask = 16;

float dot(const float* a, const float* b, int64_t k) {
  float sum = 0.0f;
  for (int64_t i = 0; i < k; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

void ref_matmul(const MatmulCall& c) {
  const format::Format& f = *format::find(c.w.type);
  const auto* matrix = static_cast<const uint8_t*>(c.w.data);
  const int64_t tasks = (c.w.m + kColumnsPerTask - 1) / kColumnsPerTask;
  runtime::ThreadPool::global().run(c.threads, tasks, [&](int64_t task) {
    std::vector<float> row(static_cast<size_t>(c.w.k));
    const int64_t end = std::min(c.w.m, (task + 1) * kColumnsPerTask);
    for (int64_t o = task * kColumnsPerTask; o < end; ++o) {
      dequantize_row(f, c.w, matrix, o, row.data());
      for (int64_t r = 0; r < c.rows; ++r) {
        const int64_t at = r * c.w.m + o;
        c.y[at] = dot(row.data(), c.x + r * c.w.k, c.w.k) + (c.residual ? c.residual[at] : 0.0f);
      }
    }
  });
}

void ref_mul_mat_id(const MulMatIdCall& c) {
  const format::Format& f = *format::find(c.w.type);
  const auto* weights = static_cast<const uint8_t*>(c.w.data);
  // Each task owns a run of output columns of one expert and serves every (token, slot) routed to it.
  const int64_t tasks_per_expert = (c.w.m + kColumnsPerTask - 1) / kColumnsPerTask;
  std::vector<std::vector<int64_t>> routed(static_cast<size_t>(c.w.experts));
  for (int64_t ts = 0; ts < c.tokens * c.slots; ++ts) routed[static_cast<size_t>(c.ids[ts])].push_back(ts);

  runtime::ThreadPool::global().run(c.threads, c.w.experts * tasks_per_expert, [&](int64_t task) {
    const int64_t e = task / tasks_per_expert;
    const auto& pairs = routed[static_cast<size_t>(e)];
    if (pairs.empty()) return;
    const uint8_t* matrix = weights + static_cast<size_t>(e) * c.w.expert_bytes();
    std::vector<float> row(static_cast<size_t>(c.w.k));
    const int64_t begin = (task % tasks_per_expert) * kColumnsPerTask;
    const int64_t end = std::min(c.w.m, begin + kColumnsPerTask);
    for (int64_t o = begin; o < end; ++o) {
      dequantize_row(f, c.w, matrix, o, row.data());
      for (const int64_t ts : pairs) {
        const int64_t t = ts / c.slots;
        const int64_t act_row = t * c.act_slots + (c.act_slots == 1 ? 0 : ts % c.slots);
        const int64_t at = ts * c.w.m + o;
        c.y[at] = dot(row.data(), c.act + act_row * c.w.k, c.w.k) + (c.residual ? c.residual[at] : 0.0f);
      }
    }
  });
}

}  // namespace ggufmm::paths
