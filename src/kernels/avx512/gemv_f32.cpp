// F32 weights x f32 activations, AVX-512.
#include "kernels/avx512/floats.hpp"
#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels::avx512 {

const GemvFn gemv_f32 = gemv_float<F32>;

}  // namespace ggufmm::kernels::avx512
