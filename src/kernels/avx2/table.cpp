#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels {

const IsaKernels& GGUFMM_LEVEL_TABLE() {
  using namespace GGUFMM_LEVEL;
  static const IsaKernels table = [] {
#if defined(__AVXVNNI__)
    IsaKernels t{runtime::Isa::AvxVnni, quantize_act, {}};
#else
    IsaKernels t{runtime::Isa::Avx2, quantize_act, {}};
#endif
    GGUFMM_WEIGHT_TYPES(GGUFMM_SET_GEMV)
    return t;
  }();
  return table;
}

}  // namespace ggufmm::kernels
