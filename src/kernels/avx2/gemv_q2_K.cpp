// Q2_K x int8 activations, AVX2 / AVX-VNNI: 2-bit codes, a 4-bit scale and min per 16 (the K-quant driver, kquant.hpp).
#include "format/blocks.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/kquant.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct Q2K {
  using Block = format::BlockQ2_K;
  static constexpr bool kSigned = false;
  static constexpr bool kMins = true;
  static constexpr int kCentre = 2;
  static constexpr bool kGroupScales = false;
  static constexpr bool kSignedScales = false;
  static constexpr int scale_pos(int s) { return s; }

  __m256 group_scales;
  __m256i table;
  __m256 mins[2];

  explicit Q2K(const Block& b) {
    // One byte per sub-block: scale in the low nibble, min in the high one.
    const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m128i sc = _mm_and_si128(sm, _mm_set1_epi8(0x0f));
    table = _mm256_broadcastsi128_si256(sc);
    const KScales ks = k_scales(&b.d);
    group_scales = ks.d;
    k_mins(_mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(0x0f)), sc, ks, kCentre, mins);
  }

  // 32 bytes hold 128 values as four 2-bit strips; group G is strip G % 4 of half G / 4.
  template <int G>
  __m256i weights(const Block& b) const {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * (G / 4)));
    return _mm256_and_si256(_mm256_srli_epi16(q, 2 * (G % 4)), _mm256_set1_epi8(3));
  }
};

}  // namespace

const GemvFn gemv_q2_K = gemv_k<Q2K>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
