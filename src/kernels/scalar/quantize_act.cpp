// Activation quantization, portable: int8 in groups of 32 with one scale each (act_scale.hpp), plus the sums of
// the codes per 32 and, scaled, per 16.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/act_scale.hpp"
#include "kernels/scalar/scalar.hpp"

namespace ggufmm::kernels::scalar {

void quantize_act(const float* x, int rows, int64_t k, int8_t* q, float* d, int16_t* qsum, float* sum) {
  const int64_t groups = k / kGroup;
  for (int64_t g = 0; g < rows * groups; ++g) {
    const float* xg = x + g * kGroup;
    int8_t* qg = q + g * kGroup;
    float amax = 0.0f;
    bool nan = false;
    for (int i = 0; i < kGroup; ++i) {
      const float a = std::fabs(xg[i]);
      nan = nan || std::isnan(a);
      amax = std::max(amax, a);
    }
    const ActScale s = act_scale(nan ? std::numeric_limits<float>::quiet_NaN() : amax);
    int part[kGroup / kSumGroup] = {};
    for (int i = 0; i < kGroup; ++i) {
      qg[i] = s.mul != 0.0f ? static_cast<int8_t>(std::nearbyint(xg[i] * s.mul)) : int8_t{0};
      part[i / kSumGroup] += qg[i];
    }
    d[g] = s.d;
    qsum[g] = static_cast<int16_t>(part[0] + part[1]);
    // The offset term of w = d*q - m multiplies the sum of the quantized activations, not of x: then every
    // format computes exactly sum_i w_i * xq_i, and an offset adds no error beyond the activations' own rounding
    // (with the sum of x, the error would grow with m itself).
    for (int h = 0; h < kGroup / kSumGroup; ++h) sum[g * 2 + h] = s.d * static_cast<float>(part[h]);
  }
}

}  // namespace ggufmm::kernels::scalar
