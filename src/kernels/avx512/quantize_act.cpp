// Activation quantization, AVX-512: the portable quantizer's integers (scalar/quantize_act.cpp), one group of 32
// values in two registers. cvtps rounds to nearest even, as nearbyint does.
#include <immintrin.h>

#include <limits>

#include "kernels/act_scale.hpp"
#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

void quantize(const float* x, int rows, int64_t k, int8_t* q, float* d, int16_t* qsum, float* sum) {
  const int64_t groups = rows * (k / kGroup);
  for (int64_t g = 0; g < groups; ++g) {
    const __m512 lo = _mm512_loadu_ps(x + g * kGroup), hi = _mm512_loadu_ps(x + g * kGroup + 16);
    const bool nan = (_mm512_cmp_ps_mask(lo, lo, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(hi, hi, _CMP_UNORD_Q)) != 0;
    const ActScale s = act_scale(nan ? std::numeric_limits<float>::quiet_NaN()
                                     : _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi))));
    __m512i qlo = _mm512_setzero_si512(), qhi = _mm512_setzero_si512();
    if (s.mul != 0.0f) {
      const __m512 mul = _mm512_set1_ps(s.mul);
      qlo = _mm512_cvtps_epi32(_mm512_mul_ps(lo, mul));
      qhi = _mm512_cvtps_epi32(_mm512_mul_ps(hi, mul));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + g * kGroup), _mm512_cvtepi32_epi8(qlo));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + g * kGroup + 16), _mm512_cvtepi32_epi8(qhi));
    const int part_lo = _mm512_reduce_add_epi32(qlo), part_hi = _mm512_reduce_add_epi32(qhi);
    d[g] = s.d;
    qsum[g] = static_cast<int16_t>(part_lo + part_hi);
    sum[2 * g] = s.d * static_cast<float>(part_lo);
    sum[2 * g + 1] = s.d * static_cast<float>(part_hi);
  }
}

}  // namespace

const QuantizeActFn quantize_act = quantize;

}  // namespace ggufmm::kernels::avx512
