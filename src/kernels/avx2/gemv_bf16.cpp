// BF16 weights x f32 activations, AVX2.
#include "kernels/avx2/floats.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {

const GemvFn gemv_bf16 = gemv_float<BF16>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
