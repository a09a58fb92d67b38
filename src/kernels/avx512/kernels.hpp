// The AVX-512 VNNI kernels: per weight type a gemv kernel and, for the quantized ones, the panel decoder of the
// tiled path (gemv_<name>.cpp).
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/level.hpp"
#include "kernels/tile.hpp"

namespace ggufmm::kernels::avx512 {

extern const QuantizeActFn quantize_act;
GGUFMM_WEIGHT_TYPES(GGUFMM_DECLARE_GEMV)
GGUFMM_QUANT_TYPES(GGUFMM_DECLARE_PANEL)

}  // namespace ggufmm::kernels::avx512
