// Q4_K x int8 activations, AVX2 / AVX-VNNI: the K-quant driver over 4-bit codes with 6-bit scales and mins per 32.
#include "format/blocks.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/kquant.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {

const GemvFn gemv_q4_K = gemv_k<K4Format<format::BlockQ4_K>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
