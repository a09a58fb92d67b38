// MXFP4 x int8 activations, AVX2 / AVX-VNNI: two blocks a step (groups.hpp). The codes index the doubled E2M1
// values (plus a bias that makes them unsigned) with one byte shuffle per register; the scale is 2^(e - 128).
#include <bit>

#include "format/blocks.hpp"
#include "format/fp4.hpp"
#include "kernels/avx2/block32.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct MXFP4 {
  static constexpr bool kHasMin = false;
  static constexpr int kBlockValues = 32;
  static constexpr int kUnitValues = kStepValues;
  static constexpr int kBlockBytes = sizeof(format::BlockMXFP4);
  static constexpr int kUnitBytes = kStepGroups * kBlockBytes;
  static constexpr int kBias = 12;  // the largest magnitude
  static constexpr int kMaxCode = 2 * kBias;

  // Half the E8M0 value, 2^(e - 128) (subnormal for e < 2), from its bits.
  static float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }

  struct Unit {
    StepWeights w;

    explicit Unit(const uint8_t* p) {
      constexpr int q = offsetof(format::BlockMXFP4, qs), b = kBlockBytes;
      split_nibbles(two_runs(p, q, q + b), w.lo, w.hi);
      const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(format::kMXFP4Values));
      const __m256i table = _mm256_broadcastsi128_si256(_mm_add_epi8(levels, _mm_set1_epi8(kBias)));
      w.lo = _mm256_shuffle_epi8(table, w.lo);
      w.hi = _mm256_shuffle_epi8(table, w.hi);
      w.scale = _mm256_set_m128(_mm_set1_ps(e8m0_half(p[b])), _mm_set1_ps(e8m0_half(p[0])));
    }
    template <int S>
    const StepWeights& step() const {
      return w;
    }
  };
};

}  // namespace

const GemvFn gemv_mxfp4 = gemv_groups<MXFP4>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
