// Activation quantization, AVX-512: the portable quantizer's integers (scalar/quantize_act.cpp), 16 groups of 32
// values at a time, so that the groups' maxima, scales and sums come out of reduction trees as one vector each
// instead of a horizontal reduction (and two scalar divisions) per group. cvtps rounds to nearest even, as
// nearbyint does; vector division rounds as scalar division does.
#include <immintrin.h>

#include <algorithm>
#include <limits>

#include "kernels/avx512/kernels.hpp"

// GCC 12 reports the deliberately undefined lanes of its own AVX-512 intrinsics (_mm512_undefined_*) as
// uninitialized once they are inlined here: a false positive (as in nibble.hpp).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace ggufmm::kernels::avx512 {
namespace {

constexpr int kBlockGroups = 16;  // groups per block: one lane each in the block's vectors

// Reduction trees: vectors v[0..15] (lanes of group g in v[g]) become one vector whose lane g is op over v[g].
// The first level pairs v[2i] and v[2i + 1] as soon as both exist (pair), leaving 8 vectors; finish takes those.
template <class Op>
__m512 pair(__m512 a, __m512 b, Op op) {
  return op(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
}
template <class Op>
__m512 finish(const __m512 (&u)[8], Op op) {
  __m512 w[4], z[2];
  for (int j = 0; j < 4; ++j) {
    w[j] = op(_mm512_shuffle_ps(u[2 * j], u[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
              _mm512_shuffle_ps(u[2 * j], u[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  for (int j = 0; j < 2; ++j) {
    z[j] = op(_mm512_shuffle_f32x4(w[2 * j], w[2 * j + 1], _MM_SHUFFLE(2, 0, 2, 0)),
              _mm512_shuffle_f32x4(w[2 * j], w[2 * j + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  }
  return op(_mm512_shuffle_f32x4(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),
            _mm512_shuffle_f32x4(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

const auto max_op = [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); };
const auto add_op = [](__m512 a, __m512 b) {
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
};

// Groups [0, count) of a block (count <= 16); the missing ones read as zeros and are not stored.
void quantize_block(const float* x, int count, int8_t* q, float* d, int16_t* qsum, float* sum) {
  const auto present = [&](int g) { return g < count ? __mmask16(0xffff) : __mmask16(0); };
  // The groups' largest magnitudes; a group holding a NaN gets NaN (act_scale's rule), which max would drop.
  __m512 u[8], pending = _mm512_setzero_ps();
  uint32_t nan = 0;
  for (int g = 0; g < kBlockGroups; ++g) {
    const __m512 lo = _mm512_maskz_loadu_ps(present(g), x + 32 * g);
    const __m512 hi = _mm512_maskz_loadu_ps(present(g), x + 32 * g + 16);
    const __mmask16 unordered = _mm512_cmp_ps_mask(lo, lo, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(hi, hi, _CMP_UNORD_Q);
    nan |= static_cast<uint32_t>(unordered != 0) << g;
    const __m512 m = _mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi));
    if (g % 2 == 0) {
      pending = m;
    } else {
      u[g / 2] = pair(pending, m, max_op);
    }
  }
  const __m512 amax = _mm512_mask_mov_ps(finish(u, max_op), static_cast<__mmask16>(nan),
                                         _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN()));
  // act_scale, lane by lane: 127 / amax where that is finite and not 0, else codes 0 with the scale 0 (finite
  // amax) or amax itself (infinite or NaN).
  constexpr int kNonFinite = 0x01 | 0x08 | 0x10 | 0x80;  // fpclass: quiet NaN, +inf, -inf, signalling NaN
  const __m512 k127 = _mm512_set1_ps(127.0f);
  const __mmask16 nonzero = _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_NEQ_UQ);
  const __m512 inverse = _mm512_maskz_div_ps(nonzero, k127, amax);
  const __mmask16 finite = static_cast<__mmask16>(~_mm512_fpclass_ps_mask(amax, kNonFinite));
  const __mmask16 scaled = finite & static_cast<__mmask16>(~_mm512_fpclass_ps_mask(inverse, kNonFinite)) &
                           _mm512_cmp_ps_mask(inverse, _mm512_setzero_ps(), _CMP_NEQ_UQ);
  const __m512 scale = _mm512_mask_div_ps(_mm512_maskz_mov_ps(static_cast<__mmask16>(~finite), amax), scaled, amax,
                                          k127);
  alignas(64) float mul[kBlockGroups];
  _mm512_store_ps(mul, _mm512_maskz_mov_ps(scaled, inverse));

  // Codes, and the sums of each half (16 codes) through two more trees.
  __m512 sums_lo[8], sums_hi[8], pending_lo = _mm512_setzero_ps(), pending_hi = _mm512_setzero_ps();
  for (int g = 0; g < kBlockGroups; ++g) {
    // A group without a scale (zero, tiny or not finite) gets codes 0, whatever x * 0 is.
    const __m512 m = _mm512_set1_ps(mul[g]);
    const __mmask16 coded = mul[g] != 0.0f ? present(g) : __mmask16(0);
    const __m512i qlo = _mm512_maskz_cvtps_epi32(coded, _mm512_mul_ps(_mm512_maskz_loadu_ps(coded, x + 32 * g), m));
    const __m512i qhi =
        _mm512_maskz_cvtps_epi32(coded, _mm512_mul_ps(_mm512_maskz_loadu_ps(coded, x + 32 * g + 16), m));
    if (g < count) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * g), _mm512_cvtepi32_epi8(qlo));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 32 * g + 16), _mm512_cvtepi32_epi8(qhi));
    }
    if (g % 2 == 0) {
      pending_lo = _mm512_castsi512_ps(qlo);
      pending_hi = _mm512_castsi512_ps(qhi);
    } else {
      sums_lo[g / 2] = pair(pending_lo, _mm512_castsi512_ps(qlo), add_op);
      sums_hi[g / 2] = pair(pending_hi, _mm512_castsi512_ps(qhi), add_op);
    }
  }
  const __m512i part_lo = _mm512_castps_si512(finish(sums_lo, add_op));
  const __m512i part_hi = _mm512_castps_si512(finish(sums_hi, add_op));
  const auto stored = static_cast<__mmask16>((1u << count) - 1);
  _mm512_mask_storeu_ps(d, stored, scale);
  _mm256_mask_storeu_epi16(qsum, stored, _mm512_cvtepi32_epi16(_mm512_add_epi32(part_lo, part_hi)));
  // sum[2g] and sum[2g + 1]: the halves of group g, interleaved.
  const __m512 s_lo = _mm512_mul_ps(scale, _mm512_cvtepi32_ps(part_lo));
  const __m512 s_hi = _mm512_mul_ps(scale, _mm512_cvtepi32_ps(part_hi));
  const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const auto pairs_stored = [&](int from) {
    const int n = std::clamp(2 * (count - from), 0, 16);
    return static_cast<__mmask16>((1u << n) - 1);
  };
  _mm512_mask_storeu_ps(sum, pairs_stored(0), _mm512_permutex2var_ps(s_lo, first, s_hi));
  _mm512_mask_storeu_ps(sum + 16, pairs_stored(8), _mm512_permutex2var_ps(s_lo, second, s_hi));
}

void quantize(const float* x, int rows, int64_t k, int8_t* q, float* d, int16_t* qsum, float* sum) {
  const int64_t groups = rows * (k / kGroup);
  for (int64_t g = 0; g < groups; g += kBlockGroups) {
    const int count = static_cast<int>(std::min<int64_t>(kBlockGroups, groups - g));
    quantize_block(x + g * kGroup, count, q + g * kGroup, d + g, qsum + g, sum + 2 * g);
  }
}

}  // namespace

const QuantizeActFn quantize_act = quantize;

}  // namespace ggufmm::kernels::avx512
