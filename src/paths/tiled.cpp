// The prefill path: each thread decodes 32 weight rows at a time (two panels) once into an int8 form that stays
// in its L2 cache, then runs every activation row against them, a tile of up to 6 rows at a time. The cost of
// decoding a block is paid once per call, shared by all rows.
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

// Activation rows per tile kernel call: the most the kernels hold in registers.
constexpr int kTileRows = kernels::kMaxTileRows;

// Each row's decoding prefetches 2 KB on into L2. In rows shorter than 6 KB most of that falls into rows its panel
// reads anyway, and the next panel's rows would come cold from memory: they stream into L2 while this panel
// decodes instead (the next 16 rows of the range). Alternated rounds at 8 and 64 rows, rows of 1 to 4 KB: 1.02 to
// 1.21 times, experts (2048 values a row) from 128 tokens 1.05 to 1.32 (AVX2 kernels 0.84 to 1.31, median 1.14);
// rows of 8 and 15 KB, where 2 KB reach well ahead, 0.89 to 1.07 times.
bool streams_ahead(const Weight& w) { return w.row_bytes() < 6 * 1024; }

}  // namespace

void tiled_columns(const Weight& w, const ActivationBuffer& x, int64_t m0, int64_t m1, float* y, int64_t ldy,
                   const float* residual, runtime::Isa isa) {
  const format::Format& f = *format::find(w.type);
  thread_local PanelBuffer buffers[2];
  const bool stream = streams_ahead(w);
  const auto ahead = [&](int64_t next) { return stream ? std::clamp<int64_t>(m1 - next, 0, kPanelRows) : 0; };
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
    const kernels::TileFn kernel = kernels::find_tile(isa, shape);
    const kernels::TileActivations acts = x.tile_view(shape.offset_group());
    // Balanced tiles: 8 rows as 4 + 4, not 6 + 2, whose 2-row tile would load the panels as often as the 6-row
    // one for a third of the work.
    balanced_runs(x.rows(), kTileRows, [&](int64_t r0, int nr) {
      kernel(panels, count, valid, acts, r0, nr, y, ldy, o0, residual);
    });
  }
}

void tiled_matmul(const MatmulCall& c) {
  // Float weights have no int8 form: they multiply in f32 through the decode kernels.
  if (!format::find(c.w.type)->decode) return gemv_matmul(c);
  const ActivationBuffer x(c.x, c.rows, c.w.k, c.w.type, c.isa, c.threads);
  // Where panels stream the next rows, tasks of several panel pairs, so that those rows are the thread's own next
  // panel's; about 16 a thread, so that the threads still finish together.
  const int threads = runtime::ThreadPool::resolve_threads(c.threads);
  constexpr int64_t kPair = 2 * kPanelRows;
  const int64_t rows_per_task = streams_ahead(c.w) ? std::max(kPair, c.w.m / (16 * threads) / kPair * kPair) : kPair;
  runtime::ThreadPool::global().run(threads, (c.w.m + rows_per_task - 1) / rows_per_task, [&](int64_t task) {
    const int64_t m0 = task * rows_per_task;
    tiled_columns(c.w, x, m0, std::min(c.w.m, m0 + rows_per_task), c.y, c.w.m, c.residual, c.isa);
  });
}

}  // namespace ggufmm::paths
