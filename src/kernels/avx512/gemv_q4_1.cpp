// Q4_1 x int8 activations, AVX-512 VNNI: four blocks a step (groups.hpp).
#include "format/blocks.hpp"
#include "kernels/avx512/block32.hpp"
#include "kernels/avx512/groups.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {

const GemvFn gemv_q4_1 = gemv_groups<Legacy32<format::BlockQ4_1>>;
const PanelDecodeFn panel_q4_1 = decode_panel<NibbleGroupPanel<Legacy32<format::BlockQ4_1>>>;

}  // namespace ggufmm::kernels::avx512
