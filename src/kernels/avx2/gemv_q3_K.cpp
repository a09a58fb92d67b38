// Q3_K x int8 activations, AVX2 / AVX-VNNI: 3-bit signed codes (two low bits plus a high-bit plane), signed 6-bit
// scales per 16 (the K-quant driver, kquant.hpp).
#include <cstring>

#include "format/blocks.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/kquant.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct Q3K {
  using Block = format::BlockQ3_K;
  static constexpr bool kSigned = true;
  static constexpr bool kMins = false;
  static constexpr int kCentre = 0;
  static constexpr bool kGroupScales = false;
  static constexpr bool kSignedScales = true;
  static constexpr int scale_pos(int s) { return s; }

  __m256 group_scales;
  __m256i table;
  __m256 mins[2];
  __m256i hmask;

  explicit Q3K(const Block& b) {
    // Sixteen 6-bit scales biased by 32: the low nibble of byte s % 8 (sub-blocks 8-15: the high nibble) under
    // bits 2 * (s / 4) of byte 8 + s % 4. A dword per four sub-blocks.
    uint32_t lo[2], hi;
    std::memcpy(lo, b.scales, sizeof lo);
    std::memcpy(&hi, b.scales + 8, sizeof hi);
    const uint32_t nibble = 0x0f0f0f0f, two = 0x03030303;
    const __m128i biased = _mm_setr_epi32(static_cast<int>((lo[0] & nibble) | (hi & two) << 4),
                                          static_cast<int>((lo[1] & nibble) | (hi >> 2 & two) << 4),
                                          static_cast<int>((lo[0] >> 4 & nibble) | (hi >> 4 & two) << 4),
                                          static_cast<int>((lo[1] >> 4 & nibble) | (hi >> 6 & two) << 4));
    table = _mm256_broadcastsi128_si256(_mm_sub_epi8(biased, _mm_set1_epi8(32)));
    group_scales = k_scale(b.d);
    hmask = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
  }

  // Group G: low two bits as Q2_K's strips, high bit G of each hmask byte; a clear high bit means code - 4.
  template <int G>
  __m256i weights(const Block& b) const {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * (G / 4)));
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(q, 2 * (G % 4)), _mm256_set1_epi8(3));
    const __m256i high = G < 2 ? _mm256_slli_epi16(hmask, 2 - G) : _mm256_srli_epi16(hmask, G - 2);  // bit G at 2
    return _mm256_sub_epi8(low, _mm256_andnot_si256(high, _mm256_set1_epi8(4)));
  }
};

}  // namespace

const GemvFn gemv_q3_K = gemv_k<Q3K>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
