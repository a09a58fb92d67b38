// The int8 tile kernel, AVX2 and AVX-VNNI: a panel's 16 weight rows in two registers (8 int32 lanes each), up to 3
// activation rows at a time, so 6 int32 and 6 f32 accumulators and the operands fit the 16 registers. Per group of
// S values the int32 dot products become f32 once, scaled by weight scale x activation scale; asymmetric weights
// subtract offset x activation sum, per group of O values (O = 0: symmetric). With AVX-VNNI the dot product is
// vpdpbusd on the unsigned codes (q + 128, corrected by -128 x the activation sum). Plain AVX2 has only vpmaddubsw,
// whose pairs of products saturate at 2^15: it multiplies |q| by the activations carrying q's sign, or, where the
// panel's levels lie within [-R, R) for R = 16, 32 or 64 (Panel::reach), q + R by the activations as they are,
// corrected like vpdpbusd's codes; the smaller R, the more chunks' pairs of products add up in int16 before they
// widen (4, 2 or 1).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/avx2/dot.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

constexpr int kRowsPerStep = 3;

inline __m256i broadcast_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return _mm256_set1_epi32(v);
}

// Rows [r0, r0 + NR) against one panel into out (from the panel's first row); `valid` of its 16 rows are stored.
// R: the reach of the panel's levels (Panel::reach), which picks the plain AVX2 dot product.
template <int NR, int S, int O, int R>
uint32_t panel_rows(const Panel& panel, int valid, const TileActivations& x, int64_t r0, const TileOutput& out,
                    L2Stream* ahead) {
  // Activation groups are the finer of S and O: H of them per scale group.
  constexpr int H = O == 16 ? S / 16 : 1;
  // Chunks whose vpmaddubsw pairs add up in int16: a pair of codes below 2R times activations within +-127.
  constexpr int kChunksPerWiden = R == 128 ? 1 : INT16_MAX / (2 * (2 * R - 1) * 127);
  static_assert(S / 4 % kChunksPerWiden == 0);
  const int64_t groups = x.k / S;
  const __m256i ones = _mm256_set1_epi16(1);
  const int8_t* xq[NR];
  const TileGroup* row_groups[NR];
  __m256 acc[NR][2];
  for (int r = 0; r < NR; ++r) {
    xq[r] = x.codes(r0 + r);
    row_groups[r] = x.groups(r0 + r, S / H);
    acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (ahead) ahead->step();
    __m256i t[NR][2];
    [[maybe_unused]] __m256i pairs[NR][2];
    for (int r = 0; r < NR; ++r) {
      const TileGroup* xg = row_groups[r] + g * H;
      int32_t bias = xg[0].bias;
      if constexpr (H == 2) bias += xg[1].bias;
      // -128 x the activation sum undoes codes q + 128; q + R needs -R x the sum. |q| times the signed
      // activations needs nothing.
      const int32_t correction = R == 128 && !kVnni ? 0 : bias / (128 / R);
      t[r][0] = t[r][1] = _mm256_set1_epi32(correction);
      pairs[r][0] = pairs[r][1] = _mm256_setzero_si256();
    }
    for (int c = 0; c < S / 4; ++c) {
      const uint8_t* chunk = panel.codes + (g * (S / 4) + c) * 64;
      __m256i w[2] = {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk)),
                      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk + 32))};
      // vpdpbusd takes the codes as they are (R is 128 there); vpmaddubsw, |q| or q + R.
      [[maybe_unused]] __m256i level[2], magnitude[2];
      for (int h = 0; h < 2 && !kVnni; ++h) {
        if constexpr (R == 128) {
          level[h] = _mm256_xor_si256(w[h], _mm256_set1_epi8(static_cast<char>(0x80)));
          magnitude[h] = _mm256_abs_epi8(level[h]);
        } else {
          w[h] = _mm256_sub_epi8(w[h], _mm256_set1_epi8(static_cast<char>(128 - R)));  // q + R, in [0, 2R)
        }
      }
      for (int r = 0; r < NR; ++r) {
        const __m256i xb = broadcast_i32(xq[r] + (g * (S / 4) + c) * 4);
        for (int h = 0; h < 2; ++h) {
          if constexpr (kVnni) {
#if defined(__AVXVNNI__)
            t[r][h] = _mm256_dpbusd_avx_epi32(t[r][h], w[h], xb);
#endif
          } else if constexpr (R == 128) {
            const __m256i products = _mm256_maddubs_epi16(magnitude[h], _mm256_sign_epi8(xb, level[h]));
            t[r][h] = _mm256_add_epi32(t[r][h], _mm256_madd_epi16(products, ones));
          } else if constexpr (kChunksPerWiden == 1) {
            t[r][h] = _mm256_add_epi32(t[r][h], _mm256_madd_epi16(_mm256_maddubs_epi16(w[h], xb), ones));
          } else {
            pairs[r][h] = _mm256_add_epi16(pairs[r][h], _mm256_maddubs_epi16(w[h], xb));
            if (c % kChunksPerWiden == kChunksPerWiden - 1) {
              t[r][h] = _mm256_add_epi32(t[r][h], _mm256_madd_epi16(pairs[r][h], ones));
              pairs[r][h] = _mm256_setzero_si256();
            }
          }
        }
      }
    }
    const __m256 scale[2] = {_mm256_loadu_ps(panel.scales + g * 16), _mm256_loadu_ps(panel.scales + g * 16 + 8)};
    for (int r = 0; r < NR; ++r) {
      const __m256 dx = _mm256_set1_ps(row_groups[r][g * H].d);
      for (int h = 0; h < 2; ++h) {
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t[r][h]), _mm256_mul_ps(scale[h], dx), acc[r][h]);
      }
    }
    for (int j = 0; j < H && O > 0; ++j) {
      const float* offsets = panel.offsets + (g * H + j) * 16;
      const __m256 offset[2] = {_mm256_loadu_ps(offsets), _mm256_loadu_ps(offsets + 8)};
      for (int r = 0; r < NR; ++r) {
        const __m256 sum = _mm256_set1_ps(row_groups[r][g * H + j].sum);
        for (int h = 0; h < 2; ++h) acc[r][h] = _mm256_fnmadd_ps(offset[h], sum, acc[r][h]);
      }
    }
  }
  uint32_t doubtful = 0;
  for (int h = 0; h < 2; ++h) {
    const int lanes = std::clamp(valid - 8 * h, 0, 8);
    if (lanes == 0) break;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int r = 0; r < NR; ++r) {
      const int64_t at = out.offset(r0 + r) + 8 * h;
      __m256 v = acc[r][h];
      if (out.residual) v = _mm256_add_ps(v, _mm256_maskload_ps(out.residual + at, mask));
      _mm256_maskstore_ps(out.y + at, mask, v);
      const __m256 magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
      const int fine = _mm256_movemask_ps(_mm256_cmp_ps(magnitude, _mm256_set1_ps(kDoubtfulAbove), _CMP_LE_OQ));
      if (~fine & ((1 << lanes) - 1)) doubtful |= 1u << r;
    }
  }
  return doubtful;
}

template <int S, int O, int R>
uint32_t panel_steps(const Panel& panel, int valid, const TileActivations& x, int64_t r0, int nr,
                     const TileOutput& out, L2Stream* ahead) {
  uint32_t doubtful = 0;
  for (int r = 0; r < nr; r += kRowsPerStep) {
    uint32_t rows;
    switch (std::min(kRowsPerStep, nr - r)) {
      case 1: rows = panel_rows<1, S, O, R>(panel, valid, x, r0 + r, out, ahead); break;
      case 2: rows = panel_rows<2, S, O, R>(panel, valid, x, r0 + r, out, ahead); break;
      default: rows = panel_rows<3, S, O, R>(panel, valid, x, r0 + r, out, ahead); break;
    }
    doubtful |= rows << r;
  }
  return doubtful;
}

template <int S, int O>
uint32_t tile(const Panel* panels, int panel_count, int valid, const TileActivations& x, int64_t r0, int nr,
              const TileOutput& out, L2Stream* ahead) {
  uint32_t doubtful = 0;
  for (int p = 0; p < panel_count; ++p) {
    const int panel_valid = std::min(valid - p * kPanelRows, kPanelRows);
    const TileOutput panel_out = out.from_column(p * kPanelRows);
    if constexpr (kVnni) {
      doubtful |= panel_steps<S, O, 128>(panels[p], panel_valid, x, r0, nr, panel_out, ahead);
    } else if (panels[p].reach == 16) {
      doubtful |= panel_steps<S, O, 16>(panels[p], panel_valid, x, r0, nr, panel_out, ahead);
    } else if (panels[p].reach == 32) {
      doubtful |= panel_steps<S, O, 32>(panels[p], panel_valid, x, r0, nr, panel_out, ahead);
    } else if (panels[p].reach == 64) {
      doubtful |= panel_steps<S, O, 64>(panels[p], panel_valid, x, r0, nr, panel_out, ahead);
    } else {
      doubtful |= panel_steps<S, O, 128>(panels[p], panel_valid, x, r0, nr, panel_out, ahead);
    }
  }
  return doubtful;
}

}  // namespace

// S = 256 is S = 32 here.
const TileKernel tile_int8[kTileForms] = {{tile<16, 0>},  {tile<16, 16>}, {tile<32, 0>}, {tile<32, 32>},
                                          {tile<32, 16>}, {tile<32, 0>},  {tile<32, 16>}};

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
