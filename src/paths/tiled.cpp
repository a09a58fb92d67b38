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

}  // namespace

void tiled_columns(const Weight& w, const ActivationBuffer& x, int64_t m0, int64_t m1, float* y, int64_t ldy,
                   const float* residual, runtime::Isa isa) {
  const format::Format& f = *format::find(w.type);
  thread_local PanelBuffer buffers[2];
  for (int64_t o0 = m0; o0 < m1; o0 += 2 * kPanelRows) {
    const int valid = static_cast<int>(std::min<int64_t>(2 * kPanelRows, m1 - o0));
    const int count = valid > kPanelRows ? 2 : 1;
    PanelShape shape = buffers[0].decode(f, w, o0, std::min(kPanelRows, valid), isa);
    if (count == 2) shape = shape & buffers[1].decode(f, w, o0 + kPanelRows, valid - kPanelRows, isa);
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
  constexpr int64_t kRowsPerTask = 2 * kPanelRows;
  runtime::ThreadPool::global().run(c.threads, (c.w.m + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t task) {
    const int64_t m0 = task * kRowsPerTask;
    tiled_columns(c.w, x, m0, std::min(c.w.m, m0 + kRowsPerTask), c.y, c.w.m, c.residual, c.isa);
  });
}

}  // namespace ggufmm::paths
