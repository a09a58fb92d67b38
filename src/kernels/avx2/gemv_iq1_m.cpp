// IQ1_M x int8 activations, AVX2 / AVX-VNNI: per run an 11-bit index into a grid of -1/0/+1 values and the sign of
// its delta, a 3-bit scale per 16 values; the fp16 super-block scale is spread over the scale words' top nibbles.
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx2/grid8.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

// A value is d * (2s + 1) * (g + delta) with delta = +-1/8 per run: in eighths q = 8g +- 1. The kernel multiplies
// u = q + 9 >= 0 and drops 9 times the activation sum of each lane.
struct IQ1M {
  using Block = format::BlockIQ1_M;
  static constexpr Grid8Form kForm = Grid8Form::RunOffset;
  static constexpr int kOffset = 9;
  static constexpr int kScaleValues = 16;
  struct Scratch {
    alignas(32) uint32_t index[32];
  };

  const Block& b;
  uint64_t words;  // the four scale words
  __m256i halves[2];
  const Scratch& m;

  IQ1M(const Block& block, Scratch& scratch) : b(block), m(scratch) {
    // A nibble per run: 3 high index bits, then the delta's sign.
    for (int pair = 0; pair < 4; ++pair) {
      uint32_t nibbles;
      std::memcpy(&nibbles, b.qh + 4 * pair, sizeof nibbles);
      store_indices(scratch.index + 8 * pair, b.qs + 8 * pair, nibbles, _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28),
                    3);
    }
    std::memcpy(&words, b.scales, sizeof words);
    // Scale word w holds the 3-bit scales of halves 4w..4w+3 in bits 0-11.
    const __m256i shifts = _mm256_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9);
    for (int p = 0; p < 2; ++p) {
      const auto lo = static_cast<int>((words >> (32 * p)) & 0xffff), hi = static_cast<int>((words >> (32 * p + 16)) & 0xffff);
      const __m256i s = _mm256_srlv_epi32(_mm256_setr_epi32(lo, lo, lo, lo, hi, hi, hi, hi), shifts);
      halves[p] = scale_words(_mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(s, 1), _mm256_set1_epi32(0xe)),
                                              _mm256_set1_epi32(1)));  // 2s + 1
    }
  }

  __m256i weights(int g) const {
    const unsigned h = b.qh[2 * g] | b.qh[2 * g + 1] << 8;  // the group's 4 nibbles
    const __m256i grid = grid_runs(format::kIQ1SGrid, m.index + 4 * g);
    // 8(g + 1) (a byte of -1 shuffles to 0), plus 2 in the runs whose delta is positive (sign bit clear).
    const __m256i u = _mm256_shuffle_epi8(_mm256_setr_epi8(8, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 16, 0, 0, 0,
                                                           0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
                                          grid);
    const __m256i run_byte = _mm256_shuffle_epi8(_mm256_set1_epi16(static_cast<short>(h)),
                                                 _mm256_setr_epi64x(0, 0, 0x0101010101010101, 0x0101010101010101));
    const __m256i sign_bit = _mm256_setr_epi64x(0x0808080808080808, static_cast<long long>(0x8080808080808080),
                                                0x0808080808080808, static_cast<long long>(0x8080808080808080));
    const __m256i positive = _mm256_cmpeq_epi8(_mm256_and_si256(run_byte, sign_bit), _mm256_setzero_si256());
    return _mm256_add_epi8(u, _mm256_and_si256(positive, _mm256_set1_epi8(2)));
  }
  __m256 scales() const {  // d / 8: the fp16 super-block scale is the top nibbles of the scale words
    const auto d = static_cast<uint16_t>(((words >> 12) & 0xf) | ((words >> 24) & 0xf0) | ((words >> 36) & 0xf00) |
                                         ((words >> 48) & 0xf000));
    return _mm256_set1_ps(half(d) * 0.125f);
  }
  __m256i half_scales(int g) const { return group_halves(halves, g); }
};

}  // namespace

const GemvFn gemv_iq1_m = gemv<Grid8Step<IQ1M>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
