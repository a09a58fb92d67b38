// Q5_K x int8 activations, AVX-512 VNNI: the K-quant driver over Q4_K's layout plus a plane of fifth bits.
#include "format/blocks.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/kquant.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {

const GemvFn gemv_q5_K = gemv_k<K4Format<format::BlockQ5_K>>;
const PanelDecodeFn panel_q5_K = decode_panel<KPanel<K4Format<format::BlockQ5_K>>>;

}  // namespace ggufmm::kernels::avx512
