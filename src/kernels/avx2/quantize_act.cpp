// Activation quantization, AVX2: the portable quantizer's integers (scalar/quantize_act.cpp), one group of 32
// values in four registers. cvtps rounds to nearest even, as nearbyint does.
#include <immintrin.h>

#include <limits>

#include "kernels/act_scale.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

float max_lane(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

int sum_lanes(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 1)));
}

void quantize(const float* x, int rows, int64_t k, int8_t* q, float* d, int16_t* qsum, float* sum) {
  const int64_t groups = rows * (k / kGroup);
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t g = 0; g < groups; ++g) {
    __m256 v[4];
    int nan = 0;
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(x + g * kGroup + 8 * j);
      nan |= _mm256_movemask_ps(_mm256_cmp_ps(v[j], v[j], _CMP_UNORD_Q));
      amax = _mm256_max_ps(amax, _mm256_and_ps(v[j], magnitude));
    }
    const ActScale s = act_scale(nan ? std::numeric_limits<float>::quiet_NaN() : max_lane(amax));
    __m256i c[4] = {};
    if (s.mul != 0.0f) {
      const __m256 mul = _mm256_set1_ps(s.mul);
      for (int j = 0; j < 4; ++j) c[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], mul));
    }
    // Packing interleaves the 128-bit lanes; one dword permutation puts the 32 codes back in order.
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + g * kGroup),
                        _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    const int part_lo = sum_lanes(_mm256_add_epi32(c[0], c[1])), part_hi = sum_lanes(_mm256_add_epi32(c[2], c[3]));
    d[g] = s.d;
    qsum[g] = static_cast<int16_t>(part_lo + part_hi);
    sum[2 * g] = s.d * static_cast<float>(part_lo);
    sum[2 * g + 1] = s.d * static_cast<float>(part_hi);
  }
}

}  // namespace

const QuantizeActFn quantize_act = quantize;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
