// TQ1_0 x int8 activations, AVX2 / AVX-VNNI: a block is four steps of 64 values (groups.hpp).
//
// A byte packs 5 base-3 digits as a fraction of 256: digit n of byte b is floor(3 * q / 256) with
// q = b * 3^n mod 256. On 16-bit words, multiplying a byte placed in the high half by 3^n leaves q * 256, and the
// high half of q * 256 * 3 is the digit; the odd bytes get theirs in the high byte of the word instead (times
// 3 * 256), so one register of 32 bytes yields 32 digits, each with its own power of 3.
//
// Group g < 5 is digit g of bytes 0-31; groups 5 and 6 are digits 0-1 and 2-3 of bytes 32-47; group 7 is digit 4
// of bytes 32-47, then the 4 digits of the 4 qh bytes (value 16 + 4n + m of the group is digit n of qh[m]).
#include "format/blocks.hpp"
#include "kernels/avx2/block32.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// The digit of every byte of `bytes`, the power of 3 of each byte's digit given per word (both bytes of a word
// take the same digit) as 3^n * 256.
inline __m256i base3_digits(__m256i bytes, __m256i power256) {
  const __m256i even = _mm256_mulhi_epu16(_mm256_mullo_epi16(bytes, power256), _mm256_set1_epi16(3));
  const __m256i odd = _mm256_mulhi_epu16(_mm256_mullo_epi16(_mm256_srli_epi16(bytes, 8), power256),
                                         _mm256_set1_epi16(3 * 256));
  return _mm256_or_si256(_mm256_and_si256(odd, _mm256_set1_epi16(static_cast<short>(0xff00))), even);
}

constexpr short kPow256[] = {256, 3 * 256, 9 * 256, 27 * 256, 81 * 256};

struct TQ1_0 {
  static constexpr bool kHasMin = false;
  static constexpr int kBlockValues = 256;
  static constexpr int kUnitValues = 256;
  static constexpr int kUnitBytes = sizeof(format::BlockTQ1_0);
  static constexpr int kBias = 1;  // the digit is the level + 1
  static constexpr int kMaxCode = 2;

  struct Unit {
    const uint8_t* p;
    __m256 scale;

    explicit Unit(const uint8_t* block)
        : p(block), scale(_mm256_set1_ps(half(load_half(block + offsetof(format::BlockTQ1_0, d))))) {}

    // Digits n0 of the 16 bytes at a (low lane) and n1 of those at b (high lane).
    __m256i digits(int a, int n0, int b, int n1) const {
      return base3_digits(two_runs(p, a, b), _mm256_setr_m128i(_mm_set1_epi16(kPow256[n0]), _mm_set1_epi16(kPow256[n1])));
    }

    // Step S: groups 2S and 2S + 1.
    template <int S>
    StepWeights step() const {
      if constexpr (S < 2) {
        return {digits(0, 2 * S, 0, 2 * S + 1), digits(16, 2 * S, 16, 2 * S + 1), scale};
      } else if constexpr (S == 2) {
        return {digits(0, 4, 32, 0), digits(16, 4, 32, 1), scale};
      } else {
        // Group 7's values 16-31: byte j of the high lane is qh[j % 4], digit j / 4.
        uint32_t qh;
        std::memcpy(&qh, p + offsetof(format::BlockTQ1_0, qh), sizeof qh);
        const __m256i bytes = _mm256_setr_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 32)),
                                                _mm_set1_epi32(static_cast<int>(qh)));
        const __m256i powers = _mm256_setr_epi16(kPow256[3], kPow256[3], kPow256[3], kPow256[3], kPow256[3],
                                                 kPow256[3], kPow256[3], kPow256[3], kPow256[0], kPow256[0],
                                                 kPow256[1], kPow256[1], kPow256[2], kPow256[2], kPow256[3],
                                                 kPow256[3]);
        return {digits(32, 2, 32, 4), base3_digits(bytes, powers), scale};
      }
    }
  };
};

}  // namespace

const GemvFn gemv_tq1_0 = gemv_groups<TQ1_0>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
