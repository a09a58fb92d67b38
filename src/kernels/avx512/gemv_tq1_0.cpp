// TQ1_0 x int8 activations, AVX-512 VNNI: a block is two steps of 128 values (groups.hpp).
//
// A byte packs 5 base-3 digits as a fraction of 256: digit n of byte b is floor(3 * q / 256) with
// q = b * 3^n mod 256. On 16-bit words, multiplying a byte placed in the high half by 3^n leaves q * 256, and the
// high half of q * 256 * 3 is the digit; the odd bytes get theirs in the high byte of the word instead (times
// 3 * 256), so one register of 64 bytes yields 64 digits, each with its own power of 3.
//
// Group g < 5 is digit g of bytes 0-31; groups 5 and 6 are digits 0-1 and 2-3 of bytes 32-47; group 7 is digit 4
// of bytes 32-47, then the 4 digits of the 4 qh bytes (value 16 + 4n + m of the group is digit n of qh[m]).
#include "format/blocks.hpp"
#include "kernels/avx512/groups.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// The digit of every byte of `bytes`, the power of 3 of each byte's digit given per word (both bytes of a word
// take the same digit) as 3^n * 256.
inline __m512i base3_digits(__m512i bytes, __m512i power256) {
  const __m512i even = _mm512_mulhi_epu16(_mm512_mullo_epi16(bytes, power256), _mm512_set1_epi16(3));
  const __m512i odd = _mm512_mulhi_epu16(_mm512_mullo_epi16(_mm512_srli_epi16(bytes, 8), power256),
                                         _mm512_set1_epi16(3 * 256));
  return _mm512_ternarylogic_epi32(odd, even, _mm512_set1_epi16(static_cast<short>(0xff00)), 0xec);  // odd & m | even
}

// 3^n * 256 in every word of lane g, n = digits[g].
inline __m512i lane_powers(int n0, int n1, int n2, int n3) {
  constexpr short kPow[] = {256, 3 * 256, 9 * 256, 27 * 256, 81 * 256};
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_setr_m128i(_mm_set1_epi16(kPow[n0]), _mm_set1_epi16(kPow[n1]))),
      _mm256_setr_m128i(_mm_set1_epi16(kPow[n2]), _mm_set1_epi16(kPow[n3])), 1);
}

struct TQ1_0 {
  static constexpr bool kHasMin = false;
  static constexpr int kBlockValues = 256;
  static constexpr int kUnitValues = 256;
  static constexpr int kUnitBytes = sizeof(format::BlockTQ1_0);
  static constexpr int kBias[kStepGroups] = {1, 1, 1, 1};  // the digit is the level + 1

  struct Unit {
    const uint8_t* p;
    __m512 scale;

    explicit Unit(const uint8_t* block) : p(block) {
      uint16_t d;
      std::memcpy(&d, p + offsetof(format::BlockTQ1_0, d), sizeof d);
      scale = _mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(d)));
    }

    __m128i run(int at) const { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at)); }

    template <int S>
    StepWeights step() const {
      if constexpr (S == 0) {
        // Groups 0-3: digit g of bytes 0-15 (values 0-15) and of bytes 16-31 (values 16-31).
        const __m512i powers = lane_powers(0, 1, 2, 3);
        return {base3_digits(_mm512_broadcast_i32x4(run(0)), powers),
                base3_digits(_mm512_broadcast_i32x4(run(16)), powers), scale};
      } else {
        // Groups 4-7: digit 4 of bytes 0-31, then bytes 32-47 for the rest, and the qh digits last.
        const __m512i tail = _mm512_broadcast_i32x4(run(32));
        const __m512i lo = _mm512_mask_broadcast_i32x4(tail, 0x000f, run(0));
        __m512i hi = _mm512_mask_broadcast_i32x4(tail, 0x000f, run(16));
        uint32_t qh;
        std::memcpy(&qh, p + offsetof(format::BlockTQ1_0, qh), sizeof qh);
        hi = _mm512_mask_set1_epi32(hi, 0xf000, static_cast<int>(qh));
        // Lane 3 of hi: byte j is qh[j % 4], digit j / 4.
        const __m512i hi_powers = _mm512_mask_blend_epi32(
            0xf000, lane_powers(4, 1, 3, 0),
            _mm512_set_epi16(27 * 256, 27 * 256, 9 * 256, 9 * 256, 3 * 256, 3 * 256, 256, 256, 0, 0, 0, 0, 0, 0, 0,
                             0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
        return {base3_digits(lo, lane_powers(4, 0, 2, 4)), base3_digits(hi, hi_powers), scale};
      }
    }
  };
};

}  // namespace

const GemvFn gemv_tq1_0 = gemv_groups<TQ1_0>;
const PanelDecodeFn panel_tq1_0 = decode_panel<GroupPanel<TQ1_0>>;

}  // namespace ggufmm::kernels::avx512
