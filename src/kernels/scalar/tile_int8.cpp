// The int8 tile kernel, portable: the same arithmetic as the SIMD levels (int32 sums per group of S values,
// one f32 conversion per group, offsets per O values, O = 0 for symmetric weights), one output at a time.
#include <cmath>
#include <cstring>

#include "kernels/scalar/scalar.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::scalar {
namespace {

template <int S, int O>
uint32_t tile(const Panel* panels, int panel_count, int valid, const TileActivations& x, int64_t r0, int nr,
              const TileOutput& out, L2Stream* ahead) {
  // Activation groups are the finer of S and O: S / F of them per scale group.
  constexpr int F = O == 16 ? 16 : S;
  uint32_t doubtful = 0;
  for (int p = 0; p < panel_count; ++p) {
    const Panel& panel = panels[p];
    for (int l = 0; l < kPanelRows && p * kPanelRows + l < valid; ++l) {
      for (int64_t r = r0; r < r0 + nr; ++r) {
        const int8_t* xq = x.codes(r);
        float acc = 0.0f;
        for (int64_t g = 0; g < x.k / S; ++g) {
          if (ahead) ahead->step();
          const TileGroup* xg = x.groups(r, F) + g * (S / F);
          int32_t t = 0;
          for (int h = 0; h < S / F; ++h) t += xg[h].bias;
          for (int i = 0; i < S; ++i) {
            const int64_t at = g * S + i;
            t += panel.codes[(at / 4) * 64 + l * 4 + at % 4] * xq[at];
          }
          acc += static_cast<float>(t) * (panel.scales[g * 16 + l] * xg[0].d);
          for (int h = 0; h < S / F && O > 0; ++h) acc -= panel.offsets[(g * (S / F) + h) * 16 + l] * xg[h].sum;
        }
        const int64_t at = out.offset(r) + p * kPanelRows + l;
        out.y[at] = acc + (out.residual ? out.residual[at] : 0.0f);
        if (!(std::fabs(out.y[at]) <= kDoubtfulAbove)) doubtful |= 1u << (r - r0);
      }
    }
  }
  return doubtful;
}

}  // namespace

// S = 256 is S = 32 here.
const TileKernel tile_int8[kTileForms] = {{tile<16, 0>},  {tile<16, 16>}, {tile<32, 0>}, {tile<32, 32>},
                                          {tile<32, 16>}, {tile<32, 0>},  {tile<32, 16>}};

}  // namespace ggufmm::kernels::scalar
