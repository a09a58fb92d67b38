// The AVX-512 gemv driver: one weight row at a time against every activation row (1 to 7), so each weight byte
// is read once. A format supplies only the step that decodes its blocks and feeds the dot products:
//
//   struct Format {
//     static constexpr int kBlockValues;    // values per block: 32 or 256
//     static constexpr int kBlocksPerStep;  // blocks per full step (2 for 32-value blocks: one 512-bit register)
//     template <int NR, int Blocks>
//     static void step(const uint8_t* row, int64_t i, const Activations& x, __m512 (&acc)[NR]);
//   };
//
// where `i` is the index of the step's first value in the row; a row whose block count is odd ends with a step
// of one block. Lives in an anonymous namespace: each kernel file gets its own copy, compiled for this level.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "kernels/kernels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

template <class F, int NR>
void gemv_rows(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y,
               int64_t ldy, const float* residual) {
  for (int64_t o = m0; o < m1; ++o) {
    const uint8_t* row = w + static_cast<size_t>(o) * row_bytes;
    __m512 acc[NR];
    for (int r = 0; r < NR; ++r) acc[r] = _mm512_setzero_ps();
    constexpr int kStep = F::kBlockValues * F::kBlocksPerStep;
    int64_t i = 0;
    for (; i + kStep <= x.k; i += kStep) F::template step<NR, F::kBlocksPerStep>(row, i, x, acc);
    if constexpr (F::kBlocksPerStep > 1) {
      for (; i < x.k; i += F::kBlockValues) F::template step<NR, 1>(row, i, x, acc);
    }
    for (int r = 0; r < NR; ++r) {
      const int64_t at = r * ldy + o;
      y[at] = _mm512_reduce_add_ps(acc[r]) + (residual ? residual[at] : 0.0f);
    }
  }
}

template <class F>
void gemv(const uint8_t* w, size_t row_bytes, int64_t m0, int64_t m1, const Activations& x, float* y, int64_t ldy,
          const float* residual) {
  with_rows(x.rows, [&]<int NR>() { gemv_rows<F, NR>(w, row_bytes, m0, m1, x, y, ldy, residual); });
}

inline float half(uint16_t h) { return _cvtsh_ss(h); }

// Two f16 scales, each spread over 8 lanes: lanes 0-7 get a, lanes 8-15 get b.
inline __m512 two_halves(uint16_t a, uint16_t b) {
  const __m512 both = _mm512_cvtph_ps(_mm256_set1_epi32(static_cast<int>(a | static_cast<uint32_t>(b) << 16)));
  // cvtph of the repeated pair gives a,b,a,b,...; pick a for the low 8 lanes and b for the high 8.
  return _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), both);
}

// The activation scales of groups g and g+1 of row r, spread over 8 lanes each (one group for Blocks == 1).
template <int Blocks = 2>
inline __m512 group_scales(const Activations& x, int r, int64_t g) {
  const float* d = x.d + r * (x.k / kGroup) + g;
  if constexpr (Blocks == 1) return _mm512_set1_ps(d[0]);
  return _mm512_insertf32x8(_mm512_set1_ps(d[0]), _mm256_set1_ps(d[1]), 1);
}

}  // namespace
}  // namespace ggufmm::kernels::avx512

namespace ggufmm::kernels::avx512 {
namespace {

// The int8 product of signed weights and signed activations on the u8 x s8 instruction: |w| times x with the
// sign of w moved onto x (activations stay within +-127, so negating them cannot overflow).
inline __m512i dot_signed(__m512i acc, __m512i w_abs, __mmask64 w_negative, __m512i xq) {
  return _mm512_dpbusd_epi32(acc, w_abs, _mm512_mask_sub_epi8(xq, w_negative, _mm512_setzero_si512(), xq));
}

// 64 activation codes from value i of row r, or 32 (upper half zero) for a step of one 32-value block.
template <int Blocks = 2>
inline __m512i load_act(const Activations& x, int r, int64_t i) {
  const int8_t* p = x.q + r * x.k + i;
  if constexpr (Blocks == 2) return _mm512_loadu_si512(p);
  return _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

}  // namespace
}  // namespace ggufmm::kernels::avx512
