// IQ3_S x int8 activations, AVX2 / AVX-VNNI: the codebook step (Grid8Step) with a group's 8 grid words of 4 values.
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx2/grid8.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// 9-bit grid indices (low bytes in qs; the ninth bit of index j of group g is bit j of qh[g]), the signs as plain
// bits, and a 4-bit scale s per group meaning (2s + 1) * d.
struct IQ3S {
  using Block = format::BlockIQ3_S;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 32;

  const Block& b;

  explicit IQ3S(const Block& block) : b(block) {}

  __m256i weights(int g) const {
    // Bit j of qh[g] is word j's high index bit, moved up to bit 8.
    const uint32_t shifted = uint32_t{b.qh[g]} << 8;
    return grid_words(format::kIQ3SGrid, [&](int j) { return b.qs[8 * g + j] | (shifted >> j & 0x100); });
  }
  __m256i signs(int g) const {
    uint32_t bits;
    std::memcpy(&bits, b.signs + 4 * g, sizeof bits);
    return plus_minus_one(bits);
  }
  __m256 scales() const {
    uint32_t nibbles;
    std::memcpy(&nibbles, b.scales, sizeof nibbles);
    const __m256i s = _mm256_and_si256(
        _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(nibbles)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
        _mm256_set1_epi32(0xf));
    const __m256 d = _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(b.d)));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_add_ps(d, d), d);  // d * (2s + 1), exact
  }
};

}  // namespace

const GemvFn gemv_iq3_s = gemv<Grid8Step<IQ3S>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
