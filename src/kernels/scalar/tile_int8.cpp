// The int8 tile kernel, portable: the same arithmetic as the SIMD levels (int32 sums per group of S values,
// one f32 conversion per group), one output at a time.
#include <cstring>

#include "kernels/scalar/scalar.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::scalar {
namespace {

template <int S, bool Asym>
void tile(const Panel* panels, int panel_count, int valid, const TileActivations& x, int64_t r0, int nr, float* y,
          int64_t ldy, int64_t o0, const float* residual) {
  const int64_t groups = x.k / S;
  for (int p = 0; p < panel_count; ++p) {
    const Panel& panel = panels[p];
    for (int l = 0; l < kPanelRows && p * kPanelRows + l < valid; ++l) {
      for (int64_t r = r0; r < r0 + nr; ++r) {
        float acc = 0.0f;
        for (int64_t g = 0; g < groups; ++g) {
          const TileGroup& xg = x.group[r * groups + g];
          int32_t t = xg.bias;
          for (int i = 0; i < S; ++i) {
            const int64_t at = g * S + i;
            t += panel.codes[(at / 4) * 64 + l * 4 + at % 4] * x.q[r * x.k + at];
          }
          acc += static_cast<float>(t) * (panel.scales[g * 16 + l] * xg.d);
          if constexpr (Asym) acc -= panel.offsets[g * 16 + l] * xg.sum;
        }
        const int64_t at = r * ldy + o0 + p * kPanelRows + l;
        y[at] = acc + (residual ? residual[at] : 0.0f);
      }
    }
  }
}

}  // namespace

const TileFn tile_int8[2][2] = {{tile<16, false>, tile<16, true>}, {tile<32, false>, tile<32, true>}};

}  // namespace ggufmm::kernels::scalar
