// F32 weights x f32 activations, AVX2.
#include "kernels/avx2/floats.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {

const GemvFn gemv_f32 = gemv_float<F32>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
