// Q6_K x int8 activations, AVX2 / AVX-VNNI: 6-bit codes biased by 32 (low nibbles plus a plane of 2-bit tops),
// int8 scales per 16 (the K-quant driver, kquant.hpp).
#include "format/blocks.hpp"
#include "kernels/avx2/kernels.hpp"
#include "kernels/avx2/kquant.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct Q6K {
  using Block = format::BlockQ6_K;
  static constexpr bool kSigned = true;
  static constexpr bool kMins = false;
  static constexpr int kCentre = 0;
  static constexpr bool kGroupScales = false;
  static constexpr bool kSignedScales = true;
  static constexpr int scale_pos(int s) { return s; }

  __m256 group_scales;
  __m256i table;
  __m256 mins[2];

  explicit Q6K(const Block& b) {
    table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    group_scales = k_scale(b.d);
  }

  // Group G of half h = G / 4: low nibbles (G % 4 < 2) or high nibbles of ql[64h + 32 (G % 2) ..], tops in bits
  // 2 (G % 4), 2 (G % 4) + 1 of qh[32h ..].
  template <int G>
  __m256i weights(const Block& b) const {
    constexpr int h = G / 4, s = G % 4;
    const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32 * (s % 2)));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
    const __m256i low = _mm256_and_si256(s < 2 ? ql : _mm256_srli_epi16(ql, 4), _mm256_set1_epi8(0x0f));
    const __m256i top = s < 2 ? _mm256_slli_epi16(qh, 4 - 2 * s) : _mm256_srli_epi16(qh, 2 * s - 4);
    const __m256i code = _mm256_or_si256(low, _mm256_and_si256(top, _mm256_set1_epi8(0x30)));
    return _mm256_sub_epi8(code, _mm256_set1_epi8(32));
  }
};

}  // namespace

const GemvFn gemv_q6_K = gemv_k<Q6K>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
