// Q8_0 x int8 activations, AVX2 / AVX-VNNI: two blocks a step (groups.hpp). With VNNI the signed levels are
// made unsigned by flipping their top bit (level + 128); plain AVX2 keeps them signed (see dot_pair).
#include "format/blocks.hpp"
#include "kernels/avx2/block32.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// kUnsigned: codes level + 128 for the unsaturated VNNI dot product; else the signed levels.
template <bool kUnsigned>
struct Q8_0Format {
  static constexpr bool kSignedLevels = !kUnsigned;
  static constexpr bool kHasMin = false;
  static constexpr int kBlockValues = 32;
  static constexpr int kUnitValues = kStepValues;
  static constexpr int kBlockBytes = sizeof(format::BlockQ8_0);
  static constexpr int kUnitBytes = kStepGroups * kBlockBytes;
  static constexpr int kBias = kUnsigned ? 128 : 0;
  static constexpr int kMaxCode = 255;

  struct Unit {
    StepWeights w;

    explicit Unit(const uint8_t* p) {
      constexpr int q = offsetof(format::BlockQ8_0, qs), b = kBlockBytes;
      w.lo = two_runs(p, q, q + b);
      w.hi = two_runs(p, q + 16, q + b + 16);
      if constexpr (kUnsigned) {
        const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
        w.lo = _mm256_xor_si256(w.lo, flip);
        w.hi = _mm256_xor_si256(w.hi, flip);
      }
      w.scale = two_halves(load_half(p), load_half(p + b));
    }
    template <int S>
    const StepWeights& step() const {
      return w;
    }
  };
};

#if defined(__AVXVNNI__)
using Q8_0 = Q8_0Format<true>;
#else
using Q8_0 = Q8_0Format<false>;
#endif

}  // namespace

const GemvFn gemv_q8_0 = gemv_groups<Q8_0>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
