// Q4_0 x int8 activations, AVX-512 VNNI: four blocks a step (groups.hpp).
#include "format/blocks.hpp"
#include "kernels/avx512/block32.hpp"
#include "kernels/avx512/groups.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {

const GemvFn gemv_q4_0 = gemv_groups<Legacy32<format::BlockQ4_0>>;
const PanelDecodeFn panel_q4_0 = decode_panel<NibbleGroupPanel<Legacy32<format::BlockQ4_0>>>;

}  // namespace ggufmm::kernels::avx512
