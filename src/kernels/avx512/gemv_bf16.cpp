// BF16 weights x f32 activations, AVX-512.
#include "kernels/avx512/floats.hpp"
#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels::avx512 {

const GemvFn gemv_bf16 = gemv_float<BF16>;

}  // namespace ggufmm::kernels::avx512
