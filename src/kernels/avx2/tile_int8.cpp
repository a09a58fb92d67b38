// The int8 tile kernel, AVX2 and AVX-VNNI: a panel's 16 weight rows in two registers (8 int32 lanes each), up to 3
// activation rows at a time, so 6 int32 and 6 f32 accumulators and the operands fit the 16 registers. Per group of
// S values the int32 dot products become f32 once, scaled by weight scale x activation scale; asymmetric weights
// subtract offset x activation sum, per group of O values (O = 0: symmetric). With AVX-VNNI the dot product is
// vpdpbusd on the unsigned codes (q + 128, corrected by -128 x the activation sum); plain AVX2 has only the
// saturating vpmaddubsw, so it multiplies |q| by the activations carrying q's sign (at most 2 x 128 x 127 per
// pair, no saturation).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

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

// t += the 4-value dot products of each lane: weight codes w (q + 128) against activations xb.
inline __m256i dot4(__m256i t, __m256i w, __m256i xb) {
#if defined(__AVXVNNI__)
  return _mm256_dpbusd_avx_epi32(t, w, xb);
#else
  const __m256i q = _mm256_xor_si256(w, _mm256_set1_epi8(static_cast<char>(0x80)));
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(xb, q));
  return _mm256_add_epi32(t, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
#endif
}

// Rows [r0, r0 + NR) against one panel; `valid` of its 16 rows are stored.
template <int NR, int S, int O>
void panel_rows(const Panel& panel, int valid, const TileActivations& x, int64_t r0, float* y, int64_t ldy,
                int64_t o0, const float* residual) {
  // Activation groups are the finer of S and O: H of them per scale group.
  constexpr int H = O == 16 ? S / 16 : 1;
  const int64_t groups = x.k / S;
  __m256 acc[NR][2];
  for (int r = 0; r < NR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t g = 0; g < groups; ++g) {
    __m256i t[NR][2];
    for (int r = 0; r < NR; ++r) {
#if defined(__AVXVNNI__)
      const TileGroup* xg = x.group + ((r0 + r) * groups + g) * H;
      int32_t bias = xg[0].bias;
      if constexpr (H == 2) bias += xg[1].bias;
      t[r][0] = t[r][1] = _mm256_set1_epi32(bias);
#else
      t[r][0] = t[r][1] = _mm256_setzero_si256();
#endif
    }
    for (int c = 0; c < S / 4; ++c) {
      const uint8_t* chunk = panel.codes + (g * (S / 4) + c) * 64;
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk));
      const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk + 32));
      for (int r = 0; r < NR; ++r) {
        const __m256i xb = broadcast_i32(x.q + (r0 + r) * x.k + (g * (S / 4) + c) * 4);
        t[r][0] = dot4(t[r][0], w0, xb);
        t[r][1] = dot4(t[r][1], w1, xb);
      }
    }
    const __m256 scale[2] = {_mm256_loadu_ps(panel.scales + g * 16), _mm256_loadu_ps(panel.scales + g * 16 + 8)};
    for (int r = 0; r < NR; ++r) {
      const __m256 dx = _mm256_set1_ps(x.group[((r0 + r) * groups + g) * H].d);
      for (int h = 0; h < 2; ++h) {
        acc[r][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t[r][h]), _mm256_mul_ps(scale[h], dx), acc[r][h]);
      }
    }
    for (int j = 0; j < H && O > 0; ++j) {
      const float* offsets = panel.offsets + (g * H + j) * 16;
      const __m256 offset[2] = {_mm256_loadu_ps(offsets), _mm256_loadu_ps(offsets + 8)};
      for (int r = 0; r < NR; ++r) {
        const __m256 sum = _mm256_set1_ps(x.group[((r0 + r) * groups + g) * H + j].sum);
        for (int h = 0; h < 2; ++h) acc[r][h] = _mm256_fnmadd_ps(offset[h], sum, acc[r][h]);
      }
    }
  }
  for (int h = 0; h < 2; ++h) {
    const int lanes = std::clamp(valid - 8 * h, 0, 8);
    if (lanes == 0) break;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int r = 0; r < NR; ++r) {
      const int64_t at = (r0 + r) * ldy + o0 + 8 * h;
      __m256 v = acc[r][h];
      if (residual) v = _mm256_add_ps(v, _mm256_maskload_ps(residual + at, mask));
      _mm256_maskstore_ps(y + at, mask, v);
    }
  }
}

template <int S, int O>
void tile(const Panel* panels, int panel_count, int valid, const TileActivations& x, int64_t r0, int nr, float* y,
          int64_t ldy, int64_t o0, const float* residual) {
  for (int p = 0; p < panel_count; ++p) {
    const int panel_valid = std::min(valid - p * kPanelRows, kPanelRows);
    const int64_t o = o0 + p * kPanelRows;
    for (int r = 0; r < nr; r += kRowsPerStep) {
      switch (std::min(kRowsPerStep, nr - r)) {
        case 1: panel_rows<1, S, O>(panels[p], panel_valid, x, r0 + r, y, ldy, o, residual); break;
        case 2: panel_rows<2, S, O>(panels[p], panel_valid, x, r0 + r, y, ldy, o, residual); break;
        default: panel_rows<3, S, O>(panels[p], panel_valid, x, r0 + r, y, ldy, o, residual); break;
      }
    }
  }
}

}  // namespace

const TileFn tile_int8[kTileForms] = {tile<16, 0>, tile<16, 16>, tile<32, 0>, tile<32, 32>, tile<32, 16>};

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
