// IQ4_NL x int8 activations, AVX2 / AVX-VNNI: one 32-value block per step.
#include <immintrin.h>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/nibble.hpp"
#include "kernels/avx2/rows.hpp"
#include "kernels/x86/iq4.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct IQ4NL {
  static constexpr int kValues = 32;

  template <int NR>
  static void step(const uint8_t* row, int64_t i, const Activations& x, __m256 (&acc)[NR]) {
    const auto& b = reinterpret_cast<const format::BlockIQ4_NL*>(row)[i / kValues];
    iq4_prefetch<sizeof b>(reinterpret_cast<const uint8_t*>(&b));
    const float dw = half(b.d);
    float scale[NR];
    for (int r = 0; r < NR; ++r) scale[r] = dw * act_group_scale(x, r, i / kGroup);
    dot_nibble_group<NR>(decode_nibble_group(nibble_tables(format::kIQ4Values), b.qs), x, i, scale, 1, acc);
  }
};

}  // namespace

const GemvFn gemv_iq4_nl = gemv<IQ4NL>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
