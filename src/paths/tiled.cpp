// The prefill path: each thread decodes 32 weight rows at a time (two panels) once into an int8 form that stays
// in its L2 cache, then runs every activation row against them, a tile of up to 6 rows at a time. The cost of
// decoding a block is paid once per call, shared by all rows.
//
// The narrowest tile keeps the decoded block in registers: up to 8 rows run as one row tile, the gemv kernel
// over all of them, which decodes each block of a weight row once and multiplies it into the 8 rows straight
// away. Panels pay for transposing 16 rows into lanes, which only more rows repay; for formats whose blocks
// decode in a few instructions (the level's table, kernels::IsaKernels::row_tiles) that costs more at 8 rows
// than the row tile does, and the gemv path, whose passes hold at most 7 rows, reads the weight twice.
#include <algorithm>
#include <vector>

#include "format/registry.hpp"
#include "kernels/tile.hpp"
#include "paths/panel.hpp"
#include "paths/paths.hpp"
#include "runtime/thread_pool.hpp"

namespace ggufmm::paths {
namespace {

using kernels::kPanelRows;

// The rows of the range that come next stream into L2 ahead of their panels, so that those do not start cold from
// memory, while the arithmetic leaves memory idle: through the tile kernels, which step once per 32 values. Only
// where few activation rows leave the tile kernels too short for that, and rows are short, each panel streams the
// next 16 rows while it decodes, and each row's decoding prefetches its own lines 2 KB on. The tile kernels stream
// rows of 6 KB or more at any row count, and shorter rows from 9 activation rows; at 8 rows short rows keep the
// panels' streaming (docs/performance.md, panels and tiles).
bool panels_stream(const Weight& w, int64_t rows) {
  return w.row_bytes() < 6 * 1024 && rows <= kernels::kMaxRowTileRows;
}

}  // namespace

bool runs_row_tiles(const Weight& w, int64_t rows, runtime::Isa isa, std::optional<bool> forced) {
  return rows <= kernels::kMaxRowTileRows && forced.value_or(kernels::prefers_row_tiles(isa, w.type));
}

void tiled_columns(const Weight& w, const ActivationBuffer& x, int64_t m0, int64_t m1, const OutputRows& out,
                   runtime::Isa isa, std::optional<bool> row_tiles) {
  if (runs_row_tiles(w, x.rows(), isa, row_tiles)) {
    return gemv_columns(w, x, m0, m1, out, isa, kernels::kMaxRowTileRows);
  }
  const format::Format& f = *format::find(w.type);
  thread_local PanelBuffer buffers[2];
  const bool by_panels = panels_stream(w, x.rows());
  const auto ahead = [&](int64_t next) { return by_panels ? std::clamp<int64_t>(m1 - next, 0, kPanelRows) : 0; };
  for (int64_t o0 = m0; o0 < m1; o0 += 2 * kPanelRows) {
    const int valid = static_cast<int>(std::min<int64_t>(2 * kPanelRows, m1 - o0));
    const int count = valid > kPanelRows ? 2 : 1;
    const int first = std::min(kPanelRows, valid);
    PanelShape shape = buffers[0].decode(f, w, o0, first, isa, ahead(o0 + first));
    if (count == 2) {
      shape = shape & buffers[1].decode(f, w, o0 + kPanelRows, valid - kPanelRows, isa, ahead(o0 + valid));
    }
    // Both panels share one kernel, so they share one grouping.
    const kernels::Panel panels[2] = {buffers[0].pack(shape), count == 2 ? buffers[1].pack(shape) : kernels::Panel{}};
    const kernels::TileKernel kernel = kernels::find_tile(isa, shape);
    const kernels::TileActivations acts = x.tile_view(shape.offset_group());
    const int64_t next = o0 + valid, next_rows = by_panels ? 0 : std::min<int64_t>(m1 - next, 2 * kPanelRows);
    // Paced for one step per 32 values in each tile call below.
    kernels::L2Stream stream(static_cast<const uint8_t*>(w.data) + next * w.row_bytes(), next_rows * w.row_bytes(),
                             balanced_run_count(x.rows(), kernel.rows) * (w.k / 32));
    // Balanced tiles: 8 rows as 4 + 4, not 6 + 2, whose 2-row tile would load the panels as often as the 6-row
    // one for a third of the work.
    const kernels::TileOutput to = out.from_column(o0);
    balanced_runs(x.rows(), kernel.rows, [&](int64_t r0, int nr) {
      if (out.at) out.prefetch(r0, nr, o0, valid);
      out.flag(r0, kernel.run(panels, count, valid, acts, r0, nr, to, &stream));
    });
  }
}

void tiled_matmul(const MatmulCall& c) {
  // Float weights have no int8 form: they multiply in f32 through the decode kernels.
  if (!format::find(c.w.type)->decode) return gemv_matmul(c);
  // Row tiles split the weight as gemv does, in fewer and longer runs than the panel pairs' tasks below, which
  // measured slower for them.
  if (runs_row_tiles(c.w, c.rows, c.isa, c.row_tiles)) return gemv_matmul(c, kernels::kMaxRowTileRows);
  const ActivationBuffer x(c.x, c.rows, c.w.k, c.w.type, c.isa, c.threads);
  // Tasks of several panel pairs, so that the rows streamed ahead are the thread's own next panels'; about 16 a
  // thread, so that the threads still finish together.
  const int threads = runtime::ThreadPool::resolve_threads(c.threads);
  constexpr int64_t kPair = 2 * kPanelRows;
  const int64_t rows_per_task = std::max(kPair, c.w.m / (16 * threads) / kPair * kPair);
  DoubtfulRows flags(static_cast<size_t>(c.rows));
  runtime::ThreadPool::global().run(threads, (c.w.m + rows_per_task - 1) / rows_per_task, [&](int64_t task) {
    const int64_t m0 = task * rows_per_task;
    tiled_columns(c.w, x, m0, std::min(c.w.m, m0 + rows_per_task), {{c.y, c.w.m, c.residual}, &flags}, c.isa,
                  false);
  });
  recompute_doubtful(c, &flags);
}

}  // namespace ggufmm::paths
