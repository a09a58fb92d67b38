// IQ1_M: no kernel at this level yet; the table falls back to the level below.
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {

const GemvFn gemv_iq1_m = nullptr;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
