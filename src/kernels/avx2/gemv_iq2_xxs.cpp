// IQ2_XXS x int8 activations, AVX2 / AVX-VNNI: per group of 32, four 8-bit grid indices, then a word of four 7-bit
// sign indices under a 4-bit scale.
#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx2/grid8.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct IQ2XXS {
  using Block = format::BlockIQ2_XXS;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 32;
  struct Scratch {
    alignas(32) uint32_t sign_bits[8];
  };

  const uint8_t* qs;
  uint16_t d;
  __m256i aux;  // per group: four 7-bit sign indices, then the scale in bits 28-31
  const Scratch& m;

  IQ2XXS(const Block& b, Scratch& scratch) : qs(reinterpret_cast<const uint8_t*>(b.qs)), d(b.d), m(scratch) {
    // The aux words are the odd words of the 64 bytes.
    const __m256 lo = _mm256_loadu_ps(reinterpret_cast<const float*>(qs));
    const __m256 hi = _mm256_loadu_ps(reinterpret_cast<const float*>(qs + 32));
    aux = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(lo, hi, 0xdd)), 0xd8);
    // The four 7-bit fields of each word into its four bytes: fields 2-3 up to the high half, then fields 1 and 3
    // up to their own byte.
    const __m256i halves = _mm256_blend_epi16(aux, _mm256_slli_epi32(aux, 2), 0xaa);
    const __m256i bytes = _mm256_or_si256(_mm256_and_si256(halves, _mm256_set1_epi16(0x007f)),
                                          _mm256_and_si256(_mm256_slli_epi16(halves, 1), _mm256_set1_epi16(0x7f00)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(scratch.sign_bits), complete_signs(bytes));
  }

  __m256i weights(int g) const { return grid_runs(format::kIQ2XXSGrid, qs + 8 * g); }
  __m256i signs(int g) const { return plus_minus_one(m.sign_bits[g]); }
  __m256 scales() const {  // 2s + 1 from the top 4 bits (bit 27 below them is or-ed away)
    const __m256i odd = _mm256_or_si256(_mm256_srli_epi32(aux, 27), _mm256_set1_epi32(1));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(odd), eighth_of_half(d));
  }
};

}  // namespace

const GemvFn gemv_iq2_xxs = gemv<Grid8Step<IQ2XXS>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
