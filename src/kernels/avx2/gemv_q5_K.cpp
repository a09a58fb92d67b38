// Q5_K x int8 activations, AVX2 / AVX-VNNI: the K-quant driver over Q4_K's layout plus a plane of fifth bits.
#include "format/blocks.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/kquant.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {

const GemvFn gemv_q5_K = gemv_k<K4Format<format::BlockQ5_K>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
