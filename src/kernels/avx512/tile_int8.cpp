// The int8 tile kernel, AVX-512 VNNI: 16 weight rows per register (one int32 lane each), 1 or 2 panels, a few
// activation rows. Per group of 32 activation values (one activation scale) the int32 dot products (vpdpbusd:
// unsigned weight codes x broadcast signed activation codes) of each weight scale group (S = 32: one, S = 16:
// two halves) become f32, scaled by the weight scale and added up; the activation scale multiplies their total
// once. Asymmetric weights subtract offset x activation sum, per group of O values (O = 0: symmetric).
//
// S = 32 holds the int32 sums and f32 sums of 6 rows x 2 panels in 24 registers. S = 16 holds the first half's
// scaled sums besides, so it takes 4 rows: one multiply per activation group instead of one per half, which ran
// 1.07 to 1.09 times as fast as 6 rows scaling each half on its own (q6_K, iq2_xs, iq2_s; 516 rows of 14336).
#include <immintrin.h>

#include <algorithm>
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

constexpr int most_rows(int S) { return S == 16 ? 4 : 6; }

template <int P, int NR, int S, int O>
void tile_rows(const Panel* panels, int valid, const TileActivations& x, int64_t r0, float* y, int64_t ldy,
               int64_t o0, const float* residual, L2Stream* ahead) {
  static_assert(NR <= most_rows(S));
  // x.group holds groups of the finer of S and O values: E of them per activation group.
  constexpr int E = S == 16 || O == 16 ? 2 : 1;
  constexpr int kHalves = 32 / S;  // weight scale groups per activation group
  const int64_t groups = x.k / 32;
  __m512 acc[NR][P];
  for (int r = 0; r < NR; ++r) {
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (ahead) ahead->step();
    const TileGroup* xg[NR];
    for (int r = 0; r < NR; ++r) xg[r] = x.group + ((r0 + r) * groups + g) * E;
    __m512 total[NR][P];  // S = 16: the first half's weight scale x int32 dot product
    const auto half = [&]<int h>() {
      __m512i t[NR][P];
      for (int r = 0; r < NR; ++r) {
        const int32_t bias = S == 16 ? xg[r][h].bias : E == 2 ? xg[r][0].bias + xg[r][1].bias : xg[r][0].bias;
        for (int p = 0; p < P; ++p) t[r][p] = _mm512_set1_epi32(bias);
      }
      for (int c = 0; c < S / 4; ++c) {
        const int64_t chunk = g * 8 + h * (S / 4) + c;
        __m512i w[P];
        for (int p = 0; p < P; ++p) w[p] = _mm512_loadu_si512(panels[p].codes + chunk * 64);
        for (int r = 0; r < NR; ++r) {
          const __m512i xb = _mm512_set1_epi32(load_i32(x.q + (r0 + r) * x.k + chunk * 4));
          for (int p = 0; p < P; ++p) t[r][p] = _mm512_dpbusd_epi32(t[r][p], w[p], xb);
        }
      }
      for (int p = 0; p < P; ++p) {
        const __m512 scale = _mm512_loadu_ps(panels[p].scales + (g * kHalves + h) * 16);
        for (int r = 0; r < NR; ++r) {
          const __m512 dot = _mm512_cvtepi32_ps(t[r][p]);
          const __m512 dx = _mm512_set1_ps(xg[r][0].d);
          if constexpr (kHalves == 1) {
            acc[r][p] = _mm512_fmadd_ps(dot, _mm512_mul_ps(scale, dx), acc[r][p]);
          } else if constexpr (h == 0) {
            total[r][p] = _mm512_mul_ps(dot, scale);
          } else {
            acc[r][p] = _mm512_fmadd_ps(_mm512_fmadd_ps(dot, scale, total[r][p]), dx, acc[r][p]);
          }
        }
      }
    };
    half.template operator()<0>();
    if constexpr (kHalves == 2) half.template operator()<1>();
    if constexpr (O > 0) {
      for (int e = 0; e < E; ++e) {
        __m512 offset[P];
        for (int p = 0; p < P; ++p) offset[p] = _mm512_loadu_ps(panels[p].offsets + (g * E + e) * 16);
        for (int r = 0; r < NR; ++r) {
          const __m512 sum = _mm512_set1_ps(xg[r][e].sum);
          for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fnmadd_ps(offset[p], sum, acc[r][p]);
        }
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
  // More rows than the registers hold run in turns.
  for (int done = 0; done < nr;) {
    const int n = std::min(nr - done, most_rows(S));
    with_rows(n, [&]<int NR>() {
      if constexpr (NR <= most_rows(S)) {
        if (panel_count == 2) return tile_rows<2, NR, S, O>(panels, valid, x, r0 + done, y, ldy, o0, residual, ahead);
        return tile_rows<1, NR, S, O>(panels, valid, x, r0 + done, y, ldy, o0, residual, ahead);
      }
    });
    done += n;
  }
}

template <int S, int O>
constexpr TileKernel kTile{tile<S, O>, most_rows(S)};

}  // namespace

const TileKernel tile_int8[kTileForms] = {kTile<16, 0>, kTile<16, 16>, kTile<32, 0>, kTile<32, 32>, kTile<32, 16>};

}  // namespace ggufmm::kernels::avx512
