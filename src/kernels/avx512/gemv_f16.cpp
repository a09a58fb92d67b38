// F16 weights x f32 activations, AVX-512.
#include "kernels/avx512/floats.hpp"
#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels::avx512 {

const GemvFn gemv_f16 = gemv_float<F16>;

}  // namespace ggufmm::kernels::avx512
