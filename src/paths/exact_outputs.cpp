// Outputs whose classification a fast path may get wrong, recomputed exactly.
#include <algorithm>
#include <cmath>
#include <vector>

#include "format/registry.hpp"
#include "paths/paths.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

// NaN, infinite, or within a factor 2 of the f32 range (where the exact value may overflow and the fast one not).
bool doubtful(float v) { return !(std::fabs(v) <= kernels::kDoubtfulAbove); }

// Whether any of a row's outputs is doubtful: nearly none is, and this scan, free of branches, vectorizes.
bool any_doubtful(const float* y, int64_t n) {
  bool any = false;
  for (int64_t i = 0; i < n; ++i) any |= doubtful(y[i]);
  return any;
}

// Weight row times activation row, summed in double, plus the residual: the exact reference for one output.
float exact_output(const format::Format& f, const Weight& w, const uint8_t* matrix, int64_t o, const float* x,
                   const float* residual, std::vector<float>& row) {
  row.resize(static_cast<size_t>(w.k));
  dequantize_row(f, w, matrix, o, row.data());
  double sum = residual ? static_cast<double>(*residual) : 0.0;
  for (int64_t i = 0; i < w.k; ++i) sum += static_cast<double>(row[static_cast<size_t>(i)]) * x[i];
  return static_cast<float>(sum);
}

}  // namespace

void dequantize_row(const format::Format& f, const Weight& w, const uint8_t* matrix, int64_t o, float* out) {
  const uint8_t* row = matrix + static_cast<size_t>(o) * w.row_bytes();
  const int64_t blocks = w.k / f.info.block_size;
  for (int64_t b = 0; b < blocks; ++b) {
    f.dequantize(row + b * f.info.block_bytes, out + b * f.info.block_size, f.info.block_size);
  }
}

void OutputRows::put(int64_t r, int64_t o0, const float* values, int64_t n) const {
  float* out = y + offset(r) + o0;
  const float* add = residual ? residual + offset(r) + o0 : nullptr;
  // Judged as they are stored: reading them back would wait for their lines, which the stores fetch.
  bool any = false;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = values[i] + (add ? add[i] : 0.0f);
    any |= doubtful(out[i]);
  }
  if (any) flag(r, 1);
}

void OutputRows::prefetch(int64_t r0, int64_t rows, int64_t o0, int64_t n) const {
  for (int64_t r = r0; r < r0 + rows; ++r) {
    const float* first = y + offset(r) + o0;
    for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(first + i, 1);
    __builtin_prefetch(first + n - 1, 1);
  }
}

void OutputRows::check(int64_t r0, int64_t rows, int64_t o0, int64_t n) const {
  for (int64_t r = r0; r < r0 + rows && flags; ++r) {
    if (any_doubtful(y + offset(r) + o0, n)) flag(r, 1);
  }
}

void OutputRows::flag(int64_t r0, uint32_t rows) const {
  for (int r = 0; rows >> r != 0 && flags; ++r) {
    if (rows >> r & 1) (*flags)[static_cast<size_t>(row(r0 + r))].store(true, std::memory_order_relaxed);
  }
}

// Calls fix(r, row) for every output row r in [0, rows) with a doubtful output, `row` being scratch of the calling
// thread: the rows flagged, or else those a scan finds. The scan reads every output once; large outputs are split
// across threads.
template <class Fix>
void for_doubtful_rows(int64_t rows, int64_t m, const float* y, int threads, const DoubtfulRows* flagged, Fix fix) {
  if (flagged) {
    std::vector<float> row;
    for (int64_t r = 0; r < rows; ++r) {
      if ((*flagged)[static_cast<size_t>(r)].load(std::memory_order_relaxed)) fix(r, row);
    }
    return;
  }
  constexpr int64_t kValuesPerTask = int64_t{1} << 18;  // 1 MiB of outputs
  const int64_t per_task = std::max<int64_t>(1, kValuesPerTask / std::max<int64_t>(m, 1));
  const int64_t tasks = (rows + per_task - 1) / per_task;
  const auto scan = [&](int64_t task) {
    std::vector<float> row;
    for (int64_t r = task * per_task; r < std::min(rows, (task + 1) * per_task); ++r) {
      if (any_doubtful(y + r * m, m)) fix(r, row);
    }
  };
  if (tasks == 1) return scan(0);
  runtime::ThreadPool::global().run(threads, tasks, scan);
}

void recompute_doubtful(const MatmulCall& c, const DoubtfulRows* flagged) {
  const format::Format& f = *format::find(c.w.type);
  for_doubtful_rows(c.rows, c.w.m, c.y, c.threads, flagged, [&](int64_t r, std::vector<float>& row) {
    for (int64_t o = 0; o < c.w.m; ++o) {
      const int64_t at = r * c.w.m + o;
      if (!doubtful(c.y[at])) continue;
      c.y[at] = exact_output(f, c.w, static_cast<const uint8_t*>(c.w.data), o, c.x + r * c.w.k,
                             c.residual ? c.residual + at : nullptr, row);
    }
  });
}

void recompute_doubtful(const MulMatIdCall& c, const DoubtfulRows* flagged) {
  const format::Format& f = *format::find(c.w.type);
  for_doubtful_rows(c.tokens * c.slots, c.w.m, c.y, c.threads, flagged, [&](int64_t ts, std::vector<float>& row) {
    const uint8_t* matrix = static_cast<const uint8_t*>(c.w.data) + static_cast<size_t>(c.ids[ts]) * c.w.expert_bytes();
    const int64_t act_row = (ts / c.slots) * c.act_slots + (c.act_slots == 1 ? 0 : ts % c.slots);
    for (int64_t o = 0; o < c.w.m; ++o) {
      const int64_t at = ts * c.w.m + o;
      if (!doubtful(c.y[at])) continue;
      c.y[at] = exact_output(f, c.w, matrix, o, c.act + act_row * c.w.k, c.residual ? c.residual + at : nullptr, row);
    }
  });
}

}  // namespace ggufmm::paths
