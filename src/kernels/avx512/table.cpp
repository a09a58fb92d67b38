#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels {

const IsaKernels& avx512_kernels() {
  using namespace avx512;
  static const IsaKernels table = [] {
    IsaKernels t{runtime::Isa::Avx512, quantize_act, {}};
    GGUFMM_WEIGHT_TYPES(GGUFMM_SET_GEMV)
    GGUFMM_QUANT_TYPES(GGUFMM_SET_PANEL)
    // Blocks that decode in a few instructions: at 8 rows one pass of the gemv kernel beats transposing them into
    // panels; from 16 rows panels win for every format (docs/performance.md, panels and tiles).
    for (const Type type : {Type::Q4_0, Type::Q4_1, Type::Q5_0, Type::Q5_1, Type::Q8_0, Type::Q2_K, Type::Q4_K,
                            Type::IQ4_XS, Type::MXFP4, Type::TQ1_0, Type::TQ2_0}) {
      t.row_tiles[static_cast<size_t>(type)] = true;
    }
    return t;
  }();
  return table;
}

}  // namespace ggufmm::kernels
