// Mixture of experts (ggml's mul_mat_id). Activation rows are quantized once (a shared row once per token, not
// per slot), grouped by expert in one stable pass, and each expert's group goes through the kernels sized for
// its real row count: decode kernels for 1 to 7 rows, tile kernels beyond. Experts with no rows cost nothing,
// and no tile row is ever computed for padding. Work is split by rows x weight bytes, not by expert count.
#include <algorithm>
#include <vector>

#include "format/registry.hpp"
#include "paths/paths.hpp"
#include "paths/profile.hpp"
#include "runtime/aligned.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

struct ExpertGroup {
  int64_t expert;
  std::vector<int64_t> pairs;  // (token * slots + slot), ascending
  std::vector<int64_t> rows;   // the activation row each pair reads

  // The step between consecutive pairs where it is constant (any for one pair), else 0: the group's outputs are
  // then rows of the output with one stride, and the kernels write them in place.
  int64_t pair_step() const {
    if (pairs.size() == 1) return 1;
    const int64_t step = pairs[1] - pairs[0];
    for (size_t j = 2; j < pairs.size(); ++j) {
      if (pairs[j] - pairs[j - 1] != step) return 0;
    }
    return step;
  }
};

struct Task {
  size_t group;
  int64_t m0, m1;
};

}  // namespace

void moe_mul_mat_id(const MulMatIdCall& c) {
  const int64_t m = c.w.m, pairs = c.tokens * c.slots;
  std::vector<ExpertGroup> groups;
  {
    std::vector<int64_t> slot_of(static_cast<size_t>(c.w.experts), -1);
    for (int64_t ts = 0; ts < pairs; ++ts) {
      const auto e = static_cast<size_t>(c.ids[ts]);
      if (slot_of[e] < 0) {
        slot_of[e] = static_cast<int64_t>(groups.size());
        groups.push_back({c.ids[ts], {}, {}});
      }
      ExpertGroup& g = groups[static_cast<size_t>(slot_of[e])];
      g.pairs.push_back(ts);
      g.rows.push_back((ts / c.slots) * c.act_slots + (c.act_slots == 1 ? 0 : ts % c.slots));
    }
  }
  const ActivationBuffer all(c.act, c.tokens * c.act_slots, c.w.k, c.w.type, c.isa, c.threads);
  std::vector<ActivationBuffer> grouped;
  grouped.reserve(groups.size());
  for (const ExpertGroup& g : groups) grouped.emplace_back(all, g.rows);

  // Tasks of similar cost: an expert's columns are cut into pieces of about the same rows x columns.
  const int threads = runtime::ThreadPool::resolve_threads(c.threads);
  const int64_t total_rows = pairs;
  const int64_t target = std::max<int64_t>(32 * 8, total_rows * m / (8 * threads));
  std::vector<Task> tasks;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto n = static_cast<int64_t>(groups[gi].pairs.size());
    const int64_t columns = std::clamp<int64_t>((target / n + 31) / 32 * 32, 32, (m + 31) / 32 * 32);
    for (int64_t m0 = 0; m0 < m; m0 += columns) tasks.push_back({gi, m0, std::min(m, m0 + columns)});
  }

  // A group whose outputs are evenly spaced (every group of one row, say) is written in place with the residual;
  // the others land in rows of their own, then go to their (token, slot) places.
  std::vector<int64_t> steps(groups.size());
  std::vector<runtime::AlignedVector<float>> outputs(groups.size());
  bool scattered = false;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    steps[gi] = groups[gi].pair_step();
    if (steps[gi] == 0) {
      outputs[gi].resize(groups[gi].pairs.size() * static_cast<size_t>(m));
      scattered = true;
    }
  }
  const bool tiles = format::find(c.w.type)->decode != nullptr;
  // Each expert is a matrix of the same shape, so one crossover serves them all.
  Weight one = c.w;
  one.experts = 1;
  const int64_t tiled_from = crossover_for(one).tiled_from;
  runtime::ThreadPool::global().run(threads, static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    const Task& t = tasks[static_cast<size_t>(ti)];
    const ExpertGroup& g = groups[t.group];
    Weight expert = c.w;
    expert.experts = 1;
    expert.data = static_cast<const uint8_t*>(c.w.data) + static_cast<size_t>(g.expert) * c.w.expert_bytes();
    const ActivationBuffer& x = grouped[t.group];
    const int64_t step = steps[t.group], first = g.pairs.front() * m;
    float* y = step != 0 ? c.y + first : outputs[t.group].data();
    const int64_t ldy = step != 0 ? step * m : m;
    const float* residual = step != 0 && c.residual ? c.residual + first : nullptr;
    if (tiles && x.rows() >= tiled_from) {
      tiled_columns(expert, x, t.m0, t.m1, y, ldy, residual, c.isa);
    } else {
      gemv_columns(expert, x, t.m0, t.m1, y, ldy, residual, c.isa);
    }
  });
  if (!scattered) return;
  runtime::ThreadPool::global().run(threads, static_cast<int64_t>(groups.size()), [&](int64_t gi) {
    const ExpertGroup& g = groups[static_cast<size_t>(gi)];
    if (steps[static_cast<size_t>(gi)] != 0) return;
    const float* y = outputs[static_cast<size_t>(gi)].data();
    for (size_t j = 0; j < g.pairs.size(); ++j) {
      float* out = c.y + g.pairs[j] * m;
      const float* res = c.residual ? c.residual + g.pairs[j] * m : nullptr;
      for (int64_t o = 0; o < m; ++o) out[o] = y[static_cast<int64_t>(j) * m + o] + (res ? res[o] : 0.0f);
    }
  });
}

}  // namespace ggufmm::paths
