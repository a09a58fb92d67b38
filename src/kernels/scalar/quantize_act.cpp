// Activation quantization, portable: int8 in groups of 32 with one scale each, plus their sums.
// Every ISA variant rounds the same way (x * (1/d), ties to even) so that all variants see the same integers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdlib>

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
    if (nan) amax = std::numeric_limits<float>::quiet_NaN();  // so a group holding one is seen as non-finite
    // A non-finite group keeps its NaN or infinity in the scale (and zero codes), so it poisons the result.
    // A group so small that 127 / amax overflows (below 1e-36) counts as zero.
    const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
    const bool coded = std::isfinite(amax) && std::isfinite(inverse) && inverse != 0.0f;
    const float scale = coded ? amax / 127.0f : std::isfinite(amax) ? 0.0f : amax;
    int total = 0;
    for (int i = 0; i < kGroup; ++i) {
      qg[i] = coded ? static_cast<int8_t>(std::nearbyint(xg[i] * inverse)) : int8_t{0};
      total += qg[i];
    }
    d[g] = scale;
    qsum[g] = static_cast<int16_t>(total);
    // The offset term of w = d*q - m multiplies the sum of the quantized activations, not of x: then every
    // format computes exactly sum_i w_i * xq_i, and an offset adds no error beyond the activations' own rounding
    // (with the sum of x, the error would grow with m itself).
    for (int h = 0; h < kGroup / kSumGroup; ++h) {
      int part = 0;
      for (int i = 0; i < kSumGroup; ++i) part += qg[h * kSumGroup + i];
      sum[g * 2 + h] = scale * static_cast<float>(part);
    }
  }
}

}  // namespace ggufmm::kernels::scalar
