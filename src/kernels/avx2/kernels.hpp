// The AVX2 (and AVX-VNNI) kernels: a gemv kernel per weight type, each in its own file (gemv_<name>.cpp).
#pragma once

#include "kernels/kernels.hpp"
#include "kernels/level.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {

extern const QuantizeActFn quantize_act;
GGUFMM_WEIGHT_TYPES(GGUFMM_DECLARE_GEMV)

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
