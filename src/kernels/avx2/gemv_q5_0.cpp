// Q5_0 x int8 activations, AVX2 / AVX-VNNI: two blocks a step (groups.hpp).
#include "format/blocks.hpp"
#include "kernels/avx2/block32.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {

const GemvFn gemv_q5_0 = gemv_groups<Legacy32<format::BlockQ5_0>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
