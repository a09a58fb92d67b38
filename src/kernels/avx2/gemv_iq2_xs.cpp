// IQ2_XS x int8 activations, AVX2 / AVX-VNNI: per run a 16-bit word (9-bit grid index, 7 sign bits), a 4-bit
// scale per 16 values.
#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx2/grid8.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct IQ2XS {
  using Block = format::BlockIQ2_XS;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 16;
  struct Scratch {
    alignas(32) uint16_t index[32];
    alignas(32) uint32_t sign_bits[8];
  };

  const Block& b;
  __m256i halves[2];
  const Scratch& m;

  IQ2XS(const Block& block, Scratch& scratch) : b(block), m(scratch) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 16));
    const __m256i index = _mm256_set1_epi16(511);
    _mm256_store_si256(reinterpret_cast<__m256i*>(scratch.index), _mm256_and_si256(lo, index));
    _mm256_store_si256(reinterpret_cast<__m256i*>(scratch.index + 16), _mm256_and_si256(hi, index));
    // The 7 sign bits on top of each word, one byte per run (the pack works per 128-bit lane).
    const __m256i signs7 =
        _mm256_permute4x64_epi64(_mm256_packus_epi16(_mm256_srli_epi16(lo, 9), _mm256_srli_epi16(hi, 9)), 0xd8);
    _mm256_store_si256(reinterpret_cast<__m256i*>(scratch.sign_bits), complete_signs(signs7));
    odd_nibble_scales(b.scales, halves);
  }

  __m256i weights(int g) const { return grid_runs(format::kIQ2XSGrid, m.index + 4 * g); }
  __m256i signs(int g) const { return plus_minus_one(m.sign_bits[g]); }
  __m256 scales() const { return eighth_of_half(b.d); }
  __m256i half_scales(int g) const { return group_halves(halves, g); }
};

}  // namespace

const GemvFn gemv_iq2_xs = gemv<Grid8Step<IQ2XS>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
