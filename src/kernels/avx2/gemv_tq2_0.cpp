// TQ2_0 x int8 activations, AVX2 / AVX-VNNI: a block is four steps of 64 values (groups.hpp). Byte j of a
// 32-byte half holds value j of its four groups, group g in bits 2g..2g+1: broadcast to both lanes, each lane
// shifts its group's bits down and masks them.
#include "format/blocks.hpp"
#include "kernels/avx2/groups.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/x86/common.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct TQ2_0 {
  static constexpr bool kHasMin = false;
  static constexpr int kBlockValues = 256;
  static constexpr int kUnitValues = 256;
  static constexpr int kUnitBytes = sizeof(format::BlockTQ2_0);
  static constexpr int kBias = 1;  // the code is the level + 1
  static constexpr int kMaxCode = 3;

  struct Unit {
    const uint8_t* p;
    __m256 scale;

    explicit Unit(const uint8_t* block)
        : p(block), scale(_mm256_set1_ps(half(load_half(block + offsetof(format::BlockTQ2_0, d))))) {}

    // Step S: groups 2S and 2S + 1, from the half S / 2 of the bytes.
    template <int S>
    StepWeights step() const {
      constexpr int kShift = 2 * (2 * S % 4);
      const __m256i shift = _mm256_setr_epi32(kShift, kShift, kShift, kShift, kShift + 2, kShift + 2, kShift + 2,
                                              kShift + 2);
      const auto codes = [&](int at) {
        const __m256i bytes = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at)));
        return _mm256_and_si256(_mm256_srlv_epi32(bytes, shift), _mm256_set1_epi8(3));
      };
      return {codes(32 * (S / 2)), codes(32 * (S / 2) + 16), scale};
    }
  };
};

}  // namespace

const GemvFn gemv_tq2_0 = gemv_groups<TQ2_0>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
