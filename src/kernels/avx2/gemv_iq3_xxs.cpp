// IQ3_XXS x int8 activations, AVX2 / AVX-VNNI: the codebook step (Grid8Step) with a group's 8 grid words of 4 values.
#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx2/grid8.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// The 64 grid indices come first in qs; then one word per group: four 7-bit sign runs under a 4-bit scale s,
// which means (s + 1/2) * d / 2 = (2s + 1) * d / 4.
struct IQ3XXS {
  using Block = format::BlockIQ3_XXS;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 32;
  struct Scratch {
    alignas(32) uint32_t sign_bits[8];
  };
  static constexpr int kIndices = 64;

  const uint8_t* qs;
  uint16_t d;
  __m256i words;
  const Scratch& m;

  IQ3XXS(const Block& b, Scratch& scratch) : qs(b.qs), d(b.d), m(scratch) {
    words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + kIndices));
    _mm256_store_si256(reinterpret_cast<__m256i*>(scratch.sign_bits), seven_bit_sign_runs(words));
  }

  __m256i weights(int g) const {
    return grid_words(format::kIQ3XXSGrid, [&](int j) { return qs[8 * g + j]; });
  }
  __m256i signs(int g) const { return plus_minus_one(m.sign_bits[g]); }
  __m256 scales() const {  // 2s + 1 from the top 4 bits (bit 27 below them is or-ed away), times d / 4
    const __m256i odd = _mm256_or_si256(_mm256_srli_epi32(words, 27), _mm256_set1_epi32(1));
    const __m256 quarter_d = _mm256_mul_ps(_mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(d))), _mm256_set1_ps(0.25f));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(odd), quarter_d);
  }
};

}  // namespace

const GemvFn gemv_iq3_xxs = gemv<Grid8Step<IQ3XXS>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
