// The int8 tile kernels, AVX-512 VNNI: 16 weight rows per register (one int32 lane each), 1 or 2 panels, a few
// activation rows. The int32 dot products (vpdpbusd: unsigned weight codes x broadcast signed activation codes)
// of a group of 32 activation values (one activation scale) become f32 and are scaled; asymmetric weights
// subtract offset x activation sum, per group of O values (O = 0: symmetric). Where the products are scaled
// depends on how the weight scales group (S values a scale):
// - S = 32: by weight scale x activation scale, per group.
// - S = 16: each half by its weight scale, their total by the activation scale.
// - S = 256: each group by its activation scale, the run's total by the weight scale.
// S = 32 holds the int32 and f32 sums of 6 rows x 2 panels in 24 registers. S = 16 and 256 hold a partial total
// besides, so they take 4 rows; that saves a multiply per half or group, and ran faster than 6 rows scaled the
// S = 32 way (docs/performance.md, Panels and tiles).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/avx512/kernels.hpp"
#include "kernels/tile.hpp"
#include "kernels/unroll.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

constexpr int most_rows(int S) { return S == 32 ? 6 : 4; }

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <int NR, int P>
using Sums = __m512i[NR][P];
template <int NR, int P>
using Totals = __m512[NR][P];

// The activation groups of one row, as x.group holds them: groups of the finer of S and O values, E per group of
// 32.
template <int S, int O>
constexpr int kEntries = S == 16 || O == 16 ? 2 : 1;

// The dot products of `chunks` chunks (4 values each) from `chunk` on, seeded with the activation codes' bias.
template <int NR, int P>
[[gnu::always_inline]] inline void dot_products(const Panel* panels, const int8_t* const (&xq)[NR], int64_t chunk,
                                                int chunks, const int32_t (&bias)[NR], Sums<NR, P>& t) {
  for (int r = 0; r < NR; ++r) {
    for (int p = 0; p < P; ++p) t[r][p] = _mm512_set1_epi32(bias[r]);
  }
  for (int c = 0; c < chunks; ++c) {
    __m512i w[P];
    for (int p = 0; p < P; ++p) w[p] = _mm512_loadu_si512(panels[p].codes + (chunk + c) * 64);
    for (int r = 0; r < NR; ++r) {
      const __m512i xb = _mm512_set1_epi32(load_i32(xq[r] + (chunk + c) * 4));
      for (int p = 0; p < P; ++p) t[r][p] = _mm512_dpbusd_epi32(t[r][p], w[p], xb);
    }
  }
}

// Group g's offsets x activation sums, off the sums.
template <int NR, int P, int S, int O>
[[gnu::always_inline]] inline void subtract_offsets(const Panel* panels, const TileGroup* const (&xg)[NR], int64_t g,
                                                    Totals<NR, P>& acc) {
  if constexpr (O > 0) {
    constexpr int E = kEntries<S, O>;
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

// The sums (+ residual) of rows r0.. into their outputs, weight rows l < valid; returns the rows given a doubtful
// output.
template <int NR, int P>
[[gnu::always_inline]] inline uint32_t store_rows(const Totals<NR, P>& acc, int valid, const TileOutput& out,
                                                  int64_t r0) {
  uint32_t doubtful = 0;
  for (int p = 0; p < P; ++p) {
    const int lanes = valid - p * kPanelRows;
    const __mmask16 mask = lanes >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << lanes) - 1);
    for (int r = 0; r < NR; ++r) {
      const int64_t at = out.offset(r0 + r) + p * kPanelRows;
      __m512 v = acc[r][p];
      if (out.residual) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, out.residual + at));
      _mm512_mask_storeu_ps(out.y + at, mask, v);
      const __m512 limit = _mm512_set1_ps(kDoubtfulAbove);
      if (_mm512_mask_cmp_ps_mask(mask, _mm512_abs_ps(v), limit, _CMP_LE_OQ) != mask) doubtful |= 1u << r;
    }
  }
  return doubtful;
}

// S = 32, written out: through dot_products and subtract_offsets it ran slower.
template <int NR, int P, int O>
uint32_t per_group(const Panel* panels, int valid, const TileActivations& x, int64_t r0, const TileOutput& out,
                   L2Stream* ahead) {
  constexpr int E = kEntries<32, O>;
  const int64_t groups = x.k / 32;
  const int8_t* xq[NR];
  const TileGroup* row_groups[NR];
  Totals<NR, P> acc;
  for (int r = 0; r < NR; ++r) {
    xq[r] = x.codes(r0 + r);
    row_groups[r] = x.groups(r0 + r, 32 / E);
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (ahead) ahead->step();
    Sums<NR, P> t;
    for (int r = 0; r < NR; ++r) {
      const TileGroup* xg = row_groups[r] + g * E;
      int32_t bias = xg[0].bias;
      if constexpr (E == 2) bias += xg[1].bias;
      for (int p = 0; p < P; ++p) t[r][p] = _mm512_set1_epi32(bias);
    }
    for (int c = 0; c < 8; ++c) {
      const int64_t chunk = g * 8 + c;
      __m512i w[P];
      for (int p = 0; p < P; ++p) w[p] = _mm512_loadu_si512(panels[p].codes + chunk * 64);
      for (int r = 0; r < NR; ++r) {
        const __m512i xb = _mm512_set1_epi32(load_i32(xq[r] + chunk * 4));
        for (int p = 0; p < P; ++p) t[r][p] = _mm512_dpbusd_epi32(t[r][p], w[p], xb);
      }
    }
    __m512 scale[P], offset[P][E];
    for (int p = 0; p < P; ++p) {
      scale[p] = _mm512_loadu_ps(panels[p].scales + g * 16);
      for (int e = 0; e < E && O > 0; ++e) offset[p][e] = _mm512_loadu_ps(panels[p].offsets + (g * E + e) * 16);
    }
    for (int r = 0; r < NR; ++r) {
      const TileGroup* xg = row_groups[r] + g * E;
      const __m512 dx = _mm512_set1_ps(xg[0].d);
      for (int p = 0; p < P; ++p) {
        acc[r][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t[r][p]), _mm512_mul_ps(scale[p], dx), acc[r][p]);
      }
      for (int e = 0; e < E && O > 0; ++e) {
        const __m512 sum = _mm512_set1_ps(xg[e].sum);
        for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fnmadd_ps(offset[p][e], sum, acc[r][p]);
      }
    }
  }
  return store_rows<NR, P>(acc, valid, out, r0);
}

// S = 16 and 256.
template <int NR, int P, int S, int O>
uint32_t per_half_or_block(const Panel* panels, int valid, const TileActivations& x, int64_t r0, const TileOutput& out,
                           L2Stream* ahead) {
  static_assert(S != 32 && NR <= most_rows(S));
  constexpr int E = kEntries<S, O>;
  const int64_t groups = x.k / 32;
  const int8_t* xq[NR];
  const TileGroup* row_groups[NR];
  Totals<NR, P> acc, part;  // part: S = 16, the first half's; S = 256, the run's so far
  for (int r = 0; r < NR; ++r) {
    xq[r] = x.codes(r0 + r);
    row_groups[r] = x.groups(r0 + r, 32 / E);
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (ahead) ahead->step();
    const TileGroup* xg[NR];
    for (int r = 0; r < NR; ++r) xg[r] = row_groups[r] + g * E;
    int32_t bias[NR];
    Sums<NR, P> t;
    if constexpr (S == 16) {
#pragma GCC unroll 2
      for (int half = 0; half < 2; ++half) {
        for (int r = 0; r < NR; ++r) bias[r] = xg[r][half].bias;
        dot_products<NR, P>(panels, xq, g * 8 + half * 4, 4, bias, t);
        for (int p = 0; p < P; ++p) {
          const __m512 scale = _mm512_loadu_ps(panels[p].scales + (2 * g + half) * 16);
          for (int r = 0; r < NR; ++r) {
            const __m512 dot = _mm512_cvtepi32_ps(t[r][p]);
            if (half == 0) {
              part[r][p] = _mm512_mul_ps(dot, scale);
            } else {
              const __m512 dx = _mm512_set1_ps(xg[r][0].d);
              acc[r][p] = _mm512_fmadd_ps(_mm512_fmadd_ps(dot, scale, part[r][p]), dx, acc[r][p]);
            }
          }
        }
      }
    } else {
      for (int r = 0; r < NR; ++r) bias[r] = E == 2 ? xg[r][0].bias + xg[r][1].bias : xg[r][0].bias;
      dot_products<NR, P>(panels, xq, g * 8, 8, bias, t);
      for (int r = 0; r < NR; ++r) {
        const __m512 dx = _mm512_set1_ps(xg[r][0].d);
        for (int p = 0; p < P; ++p) {
          part[r][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t[r][p]), dx, g % 8 == 0 ? _mm512_setzero_ps() : part[r][p]);
        }
      }
      if (g % 8 == 7) {
        for (int p = 0; p < P; ++p) {
          const __m512 scale = _mm512_loadu_ps(panels[p].scales + g * 16);
          for (int r = 0; r < NR; ++r) acc[r][p] = _mm512_fmadd_ps(part[r][p], scale, acc[r][p]);
        }
      }
    }
    subtract_offsets<NR, P, S, O>(panels, xg, g, acc);
  }
  return store_rows<NR, P>(acc, valid, out, r0);
}

template <int S, int O>
uint32_t tile(const Panel* panels, int panel_count, int valid, const TileActivations& x, int64_t r0, int nr,
              const TileOutput& out, L2Stream* ahead) {
  uint32_t doubtful = 0;
  // More rows than the registers hold run in turns.
  for (int done = 0; done < nr;) {
    const int n = std::min(nr - done, most_rows(S));
    with_rows(n, [&]<int NR>() {
      if constexpr (NR <= most_rows(S)) {
        const auto rows = [&]<int P>() {
          if constexpr (S == 32) return per_group<NR, P, O>(panels, valid, x, r0 + done, out, ahead);
          else return per_half_or_block<NR, P, S, O>(panels, valid, x, r0 + done, out, ahead);
        };
        const uint32_t turn = panel_count == 2 ? rows.template operator()<2>() : rows.template operator()<1>();
        doubtful |= turn << done;
      }
    });
    done += n;
  }
  return doubtful;
}

template <int S, int O>
constexpr TileKernel kTile{tile<S, O>, most_rows(S)};

}  // namespace

const TileKernel tile_int8[kTileForms] = {kTile<16, 0>,  kTile<16, 16>, kTile<32, 0>, kTile<32, 32>,
                                          kTile<32, 16>, kTile<256, 0>, kTile<256, 16>};

}  // namespace ggufmm::kernels::avx512
