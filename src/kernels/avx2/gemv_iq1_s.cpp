// IQ1_S x int8 activations, AVX2 / AVX-VNNI: per run an 11-bit index into a grid of -1/0/+1 values; per group of
// 32 a 16-bit word with the high index bits, a 3-bit scale and the sign of the delta every value of the group gets.
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx2/grid8.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// A value is d * (2s + 1) * (g + delta) with delta = +-1/8. The kernel multiplies u = g + 1 >= 0 and drops
// (1 - delta) times each group's activation sum.
struct IQ1S {
  using Block = format::BlockIQ1_S;
  static constexpr Grid8Form kForm = Grid8Form::GroupOffset;
  static constexpr int kScaleValues = 32;
  struct Scratch {
    alignas(32) uint32_t index[32];
  };

  const Block& b;
  __m256i h;  // the 8 group words
  const Scratch& m;

  IQ1S(const Block& block, Scratch& scratch)
      : b(block), h(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh)))), m(scratch) {
    // Two groups' words hold 3 high index bits for each of their 8 runs.
    for (int pair = 0; pair < 4; ++pair) {
      uint32_t words;
      std::memcpy(&words, b.qh + 2 * pair, sizeof words);
      store_indices(scratch.index + 8 * pair, b.qs + 8 * pair, words, _mm256_setr_epi32(0, 3, 6, 9, 16, 19, 22, 25), 3);
    }
  }

  __m256i weights(int g) const {
    return _mm256_add_epi8(grid_runs(format::kIQ1SGrid, m.index + 4 * g), _mm256_set1_epi8(1));
  }
  __m256 scales() const {  // d * (2s + 1), s in bits 12-14
    const __m256i odd = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(h, 11), _mm256_set1_epi32(0xe)),
                                        _mm256_set1_epi32(1));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(odd), _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(b.d))));
  }
  __m256 offsets() const {  // bit 15 is the delta's sign: -(1 + 1/8) or -(1 - 1/8)
    return _mm256_blendv_ps(_mm256_set1_ps(-0.875f), _mm256_set1_ps(-1.125f),
                            _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
  }
};

}  // namespace

const GemvFn gemv_iq1_s = gemv<Grid8Step<IQ1S>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
