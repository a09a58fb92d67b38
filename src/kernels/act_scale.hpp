// The scale of a group of activations, shared by every level's quantizer so that all of them produce the same
// integers: codes are nearbyint(x * mul) (ties to even), and the group's value is d * code.
#pragma once

#include <cmath>

namespace ggufmm::kernels {

struct ActScale {
  float d;    // the group's scale
  float mul;  // what x is multiplied by before rounding; 0 when every code is 0
};

// amax: the largest |x| of the group, NaN when it holds a NaN. A non-finite group keeps its NaN or infinity in the
// scale (with codes 0), so that it poisons every product it enters. A group so small that 127 / amax overflows
// (below 1e-36) counts as zero.
inline ActScale act_scale(float amax) {
  const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
  if (std::isfinite(amax) && std::isfinite(inverse) && inverse != 0.0f) return {amax / 127.0f, inverse};
  return {std::isfinite(amax) ? 0.0f : amax, 0.0f};
}

}  // namespace ggufmm::kernels
