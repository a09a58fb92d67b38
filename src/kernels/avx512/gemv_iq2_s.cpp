// IQ2_S x int8 activations, AVX-512 VNNI: per run a 10-bit grid index (low 8 bits in qs, 2 in qh) and 8
// explicit sign bits, a 4-bit scale per 16 values.
#include <cstddef>
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/gemv.hpp"
#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct IQ2S {
  using Block = format::BlockIQ2_S;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 16;
  static constexpr int kPairings = 1;

  const Block& b;

  explicit IQ2S(const Block& block) : b(block) {}

  template <int C>
  __m512i weights() const {
    const __m256i low = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qs + 8 * C)));
    // qh[2C] and qh[2C + 1] hold 2 high bits per run; read one byte early so that they arrive shifted up by 8.
    uint32_t h;
    std::memcpy(&h, reinterpret_cast<const uint8_t*>(&b) + offsetof(Block, qh) + 2 * C - 1, sizeof h);
    const __m256i high = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(h)),
                                           _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    return gather_runs(format::kIQ2SGrid, _mm256_ternarylogic_epi32(low, high, _mm256_set1_epi32(0x300), 0xf8));
  }
  template <int C>
  __mmask64 negative() const {  // the sign bytes follow the index bytes
    uint64_t s;
    std::memcpy(&s, b.qs + 32 + 8 * C, sizeof s);
    return s;
  }
  __m512i scales() const { return odd_nibble_scales(b.scales); }
  __m256 unit() const { return eighth_of_half(b.d); }
};

}  // namespace

const GemvFn gemv_iq2_s = gemv<Grid8Step<IQ2S>>;
const PanelDecodeFn panel_iq2_s = panel_rows<Grid8Panel<IQ2S>>;

}  // namespace ggufmm::kernels::avx512
