// Mixture of experts (ggml's mul_mat_id). Activation rows are quantized once (a shared row once per token, not
// per slot), grouped by expert in one stable pass, and each expert's group goes through the kernels sized for
// its real row count: decode kernels for 1 to 7 rows, tile kernels beyond. Experts with no rows cost nothing,
// and no tile row is ever computed for padding. Work is split by rows x weight bytes, not by expert count.
#include <algorithm>
#include <vector>

#include "format/registry.hpp"
#include "paths/paths.hpp"
#include "paths/profile.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

// An expert's rows: pairs [first, first + count) of the pairs sorted by expert.
struct ExpertGroup {
  int64_t expert;
  int64_t first, count;
};

struct Task {
  size_t group;
  int64_t m0, m1;
};

}  // namespace

void moe_mul_mat_id(const MulMatIdCall& c) {
  const int64_t m = c.w.m, pairs = c.tokens * c.slots;
  // The pairs (token * slots + slot) sorted by expert, stably (a counting sort), and the activation row of each.
  std::vector<int64_t> sorted(static_cast<size_t>(pairs)), rows(static_cast<size_t>(pairs));
  std::vector<ExpertGroup> groups;
  {
    std::vector<int64_t> at(static_cast<size_t>(c.w.experts) + 1, 0);
    for (int64_t ts = 0; ts < pairs; ++ts) ++at[static_cast<size_t>(c.ids[ts]) + 1];
    for (int64_t e = 0; e < c.w.experts; ++e) {
      const int64_t count = at[static_cast<size_t>(e) + 1];
      if (count > 0) groups.push_back({e, at[static_cast<size_t>(e)], count});
      at[static_cast<size_t>(e) + 1] += at[static_cast<size_t>(e)];
    }
    for (int64_t ts = 0; ts < pairs; ++ts) {
      const auto j = static_cast<size_t>(at[static_cast<size_t>(c.ids[ts])]++);
      sorted[j] = ts;
      rows[j] = (ts / c.slots) * c.act_slots + (c.act_slots == 1 ? 0 : ts % c.slots);
    }
  }
  const ActivationBuffer all(c.act, c.tokens * c.act_slots, c.w.k, c.w.type, c.isa, c.threads);
  const bool tiles = format::find(c.w.type)->decode != nullptr;
  // Each expert is a matrix of the same shape, so one crossover serves them all.
  Weight one = c.w;
  one.experts = 1;
  const int64_t tiled_from = crossover_for(one).tiled_from;
  // The tile kernels read an expert's rows where their tokens were quantized, through a map. The decode kernels
  // (row tiles too) take rows in order: those experts' rows are gathered, in one pass.
  const auto by_panels = [&](int64_t n) { return tiles && n >= tiled_from && !runs_row_tiles(one, n, c.isa); };
  std::vector<int64_t> gathered, gathered_at(groups.size());
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    if (by_panels(groups[gi].count)) continue;
    gathered_at[gi] = static_cast<int64_t>(gathered.size());
    const auto first = rows.begin() + groups[gi].first;
    gathered.insert(gathered.end(), first, first + groups[gi].count);
  }
  const ActivationBuffer in_order(all, gathered, c.threads);

  // Tasks of similar cost: an expert's columns are cut into pieces of about the same rows x columns.
  const int threads = runtime::ThreadPool::resolve_threads(c.threads);
  const int64_t total_rows = pairs;
  const int64_t target = std::max<int64_t>(32 * 8, total_rows * m / (8 * threads));
  std::vector<Task> tasks;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const int64_t n = groups[gi].count;
    const int64_t columns = std::clamp<int64_t>((target / n + 31) / 32 * 32, 32, (m + 31) / 32 * 32);
    for (int64_t m0 = 0; m0 < m; m0 += columns) tasks.push_back({gi, m0, std::min(m, m0 + columns)});
  }

  DoubtfulRows flags(static_cast<size_t>(pairs));
  runtime::ThreadPool::global().run(threads, static_cast<int64_t>(tasks.size()), [&](int64_t ti) {
    const Task& t = tasks[static_cast<size_t>(ti)];
    const ExpertGroup& g = groups[t.group];
    Weight expert = c.w;
    expert.experts = 1;
    expert.data = static_cast<const uint8_t*>(c.w.data) + static_cast<size_t>(g.expert) * c.w.expert_bytes();
    const ActivationBuffer x = by_panels(g.count) ? ActivationBuffer::mapped(all, rows.data() + g.first, g.count)
                                                  : ActivationBuffer::slice(in_order, gathered_at[t.group], g.count);
    // The kernels put each row's outputs (and residual) straight at its pair's (token, slot) place.
    const OutputRows out{{c.y, m, c.residual, sorted.data() + g.first}, &flags};
    if (tiles && x.rows() >= tiled_from) {
      tiled_columns(expert, x, t.m0, t.m1, out, c.isa);
    } else {
      gemv_columns(expert, x, t.m0, t.m1, out, c.isa);
    }
  });
  recompute_doubtful(c, &flags);
}

}  // namespace ggufmm::paths
