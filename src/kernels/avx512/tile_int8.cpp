// The int8 tile kernel, AVX-512 VNNI: 16 weight rows per register (one int32 lane each), 1 or 2 panels, up to
// 6 activation rows, so up to 12 int32 and 12 f32 accumulators stay in registers. Per group of S values the
// int32 dot products (vpdpbusd: unsigned weight codes x broadcast signed activation codes) become f32 once,
// scaled by weight scale x activation scale; asymmetric weights subtract offset x activation sum, per group of O
// values (O = 0: symmetric).
#include <immintrin.h>

#include <cstring>

#include "kernels/avx512/kernels.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <int P, int NR, int S, int O>
void tile_rows(const Panel* panels, int valid, const TileActivations& x, int64_t r0, float* y, int64_t ldy,
               int64_t o0, const float* residual, L2Stream* ahead) {
  // Activation groups are the finer of S and O: H of them per scale group.
  constexpr int H = O == 16 ? S / 16 : 1;
  const int64_t groups = x.k / S;
  __m512 acc[NR][P];
  for (int r = 0; r < NR; ++r) {
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (ahead) ahead->step();
    __m512i t[NR][P];
    for (int r = 0; r < NR; ++r) {
      const TileGroup* xg = x.group + ((r0 + r) * groups + g) * H;
      int32_t bias = xg[0].bias;
      if constexpr (H == 2) bias += xg[1].bias;
      for (int p = 0; p < P; ++p) t[r][p] = _mm512_set1_epi32(bias);
    }
    for (int c = 0; c < S / 4; ++c) {
      const int64_t chunk = g * (S / 4) + c;
      __m512i w[P];
      for (int p = 0; p < P; ++p) w[p] = _mm512_loadu_si512(panels[p].codes + chunk * 64);
      for (int r = 0; r < NR; ++r) {
        const __m512i xb = _mm512_set1_epi32(load_i32(x.q + (r0 + r) * x.k + chunk * 4));
        for (int p = 0; p < P; ++p) t[r][p] = _mm512_dpbusd_epi32(t[r][p], w[p], xb);
      }
    }
    __m512 scale[P], offset[P][H];
    for (int p = 0; p < P; ++p) {
      scale[p] = _mm512_loadu_ps(panels[p].scales + g * 16);
      for (int h = 0; h < H && O > 0; ++h) offset[p][h] = _mm512_loadu_ps(panels[p].offsets + (g * H + h) * 16);
    }
    for (int r = 0; r < NR; ++r) {
      const TileGroup* xg = x.group + ((r0 + r) * groups + g) * H;
      const __m512 dx = _mm512_set1_ps(xg[0].d);
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t[r][p]), _mm512_mul_ps(scale[p], dx), acc[r][p]);
      for (int h = 0; h < H && O > 0; ++h) {
        const __m512 sum = _mm512_set1_ps(xg[h].sum);
        for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fnmadd_ps(offset[p][h], sum, acc[r][p]);
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    const int lanes = valid - p * kPanelRows;
    const __mmask16 mask = lanes >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << lanes) - 1);
    for (int r = 0; r < NR; ++r) {
      const int64_t at = (r0 + r) * ldy + o0 + p * kPanelRows;
      __m512 v = acc[r][p];
      if (residual) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, residual + at));
      _mm512_mask_storeu_ps(y + at, mask, v);
    }
  }
}

template <int S, int O>
void tile(const Panel* panels, int panel_count, int valid, const TileActivations& x, int64_t r0, int nr, float* y,
          int64_t ldy, int64_t o0, const float* residual, L2Stream* ahead) {
  auto run = [&]<int P>() {
    switch (nr) {
      case 1: return tile_rows<P, 1, S, O>(panels, valid, x, r0, y, ldy, o0, residual, ahead);
      case 2: return tile_rows<P, 2, S, O>(panels, valid, x, r0, y, ldy, o0, residual, ahead);
      case 3: return tile_rows<P, 3, S, O>(panels, valid, x, r0, y, ldy, o0, residual, ahead);
      case 4: return tile_rows<P, 4, S, O>(panels, valid, x, r0, y, ldy, o0, residual, ahead);
      case 5: return tile_rows<P, 5, S, O>(panels, valid, x, r0, y, ldy, o0, residual, ahead);
      default: return tile_rows<P, 6, S, O>(panels, valid, x, r0, y, ldy, o0, residual, ahead);
    }
  };
  if (panel_count == 2) return run.template operator()<2>();
  return run.template operator()<1>();
}

}  // namespace

const TileFn tile_int8[kTileForms] = {tile<16, 0>, tile<16, 16>, tile<32, 0>, tile<32, 32>, tile<32, 16>};

}  // namespace ggufmm::kernels::avx512
