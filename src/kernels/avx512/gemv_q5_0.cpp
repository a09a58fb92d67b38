// Q5_0: no kernel at this level yet; the table falls back to the level below.
#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels::avx512 {

const GemvFn gemv_q5_0 = nullptr;

}  // namespace ggufmm::kernels::avx512
