// The portable level: every format through its exact int8 decoder, format-blind.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::scalar {

const IsaKernels& table();
void quantize_act(const float* x, int rows, int64_t k, int8_t* q, float* d, int16_t* qsum, float* sum);

}  // namespace ggufmm::kernels::scalar
