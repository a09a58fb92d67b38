// Q4_K x int8 activations, AVX-512 VNNI: the K-quant driver over 4-bit codes with 6-bit scales and mins per 32.
#include "format/blocks.hpp"
#include "kernels/avx512/gemv.hpp"
#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels::avx512 {

const GemvFn gemv_q4_K = gemv_k<K4Format<format::BlockQ4_K>>;
const PanelDecodeFn panel_q4_K = panel_rows<KPanel<K4Format<format::BlockQ4_K>>>;

}  // namespace ggufmm::kernels::avx512
