// IQ4_XS x int8 activations, AVX2 / AVX-VNNI: one super-block (8 groups of 32 values with 6-bit scales) per step.
#include <immintrin.h>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/nibble.hpp"
#include "kernels/avx2/rows.hpp"
#include "kernels/x86/iq4.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct IQ4XS {
  static constexpr int kValues = 256;
  static constexpr int kGroups = kValues / kGroup;

  template <int NR>
  static void step(const uint8_t* row, int64_t i, const Activations& x, __m256 (&acc)[NR]) {
    const auto& b = reinterpret_cast<const format::BlockIQ4_XS*>(row)[i / kValues];
    iq4_prefetch<sizeof b>(reinterpret_cast<const uint8_t*>(&b));
    // Weight times activation scale per row and group, read back as broadcasts.
    alignas(32) float scale[NR][kGroups];
    const __m256 ws = iq4_xs_group_scales(b);
    for (int r = 0; r < NR; ++r) {
      _mm256_store_ps(scale[r], _mm256_mul_ps(ws, _mm256_loadu_ps(x.d + r * (x.k / kGroup) + i / kGroup)));
    }
    const NibbleTables tables = nibble_tables(format::kIQ4Values);
    for (int g = 0; g < kGroups; ++g) {
      dot_nibble_group<NR>(decode_nibble_group(tables, b.qs + 16 * g), x, i + kGroup * g, &scale[0][g], kGroups, acc);
    }
  }
};

}  // namespace

const GemvFn gemv_iq4_xs = gemv<IQ4XS>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
