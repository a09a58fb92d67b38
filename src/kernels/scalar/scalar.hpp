// The portable level: every format through its exact int8 decoder, format-blind.
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::scalar {

const IsaKernels& table();
// Tile kernels by [group == 32][asymmetric].
extern const TileFn tile_int8[2][2];
void quantize_act(const float* x, int rows, int64_t k, int8_t* q, float* d, int16_t* qsum, float* sum);

}  // namespace ggufmm::kernels::scalar
