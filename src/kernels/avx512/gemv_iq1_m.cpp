// IQ1_M x int8 activations, AVX-512 VNNI: per run an 11-bit index into a grid of -1/0/+1 values and the sign of
// its delta, a 3-bit scale per 16 values; the fp16 super-block scale is spread over the scale words' top nibbles.
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/grid8.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// The codes u = q + 9 of every run, by its grid index with the delta's sign bit above it (bit 11): 8(g + 1), plus
// 2 where the delta is positive (sign clear). Built once from the grid, so that one load yields a run's codes.
struct RunCodes {
  uint64_t words[2 << 11];
};
const RunCodes kRunCodes = [] {
  RunCodes t{};
  for (int sign = 0; sign < 2; ++sign) {
    for (int i = 0; i < (1 << 11); ++i) {
      uint64_t word = 0;
      for (int v = 0; v < 8; ++v) {
        const int g = static_cast<int8_t>(format::kIQ1SGrid[i] >> (8 * v));
        word |= static_cast<uint64_t>(8 * (g + 1) + (sign ? 0 : 2)) << (8 * v);
      }
      t.words[sign << 11 | i] = word;
    }
  }
  return t;
}();

// A value is d * (2s + 1) * (g + delta) with delta = +-1/8 per run: in eighths q = 8g +- 1. The kernel multiplies
// u = q + 9 >= 0 and drops 9 times the activation sum of each half.
struct IQ1M {
  using Block = format::BlockIQ1_M;
  static constexpr Grid8Form kForm = Grid8Form::Offset;
  static constexpr int kOffset = 9;
  static constexpr int kScaleValues = 16;
  static constexpr int kPairings = 2;  // |u x| <= 18 * 127: runs of 8 fit int16
  static constexpr int kBlocksPerStep = 2;

  const Block& b;
  uint64_t words;  // the four scale words

  explicit IQ1M(const Block& block) : b(block) { std::memcpy(&words, b.scales, sizeof words); }

  template <int C>
  __m512i weights() const {
    // One nibble of qh per run: 3 high index bits, then the delta's sign.
    return grid_runs(kRunCodes.words,
                     [&](int j) { return b.qs[8 * C + j] | (b.qh[4 * C + j / 2] >> 4 * (j % 2) & 0xf) << 8; });
  }
  __m512i scales() const {
    // Scale word w holds the 3-bit scales of halves 4w..4w+3 in bits 0-11.
    const __m512i w = _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                               _mm512_cvtepu16_epi32(_mm256_zextsi128_si256(
                                                   _mm_cvtsi64_si128(static_cast<long long>(words)))));
    const __m512i s = _mm512_srlv_epi32(w, _mm512_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9));
    return _mm512_ternarylogic_epi32(_mm512_slli_epi32(s, 1), _mm512_set1_epi32(0xe), _mm512_set1_epi32(1),
                                     0xea);  // 2s + 1
  }
  __m512 offsets() const { return _mm512_mul_ps(_mm512_cvtepi32_ps(scales()), _mm512_set1_ps(kOffset)); }
  __m256 unit() const {  // the fp16 super-block scale is the top nibbles of the scale words
    return _mm256_set1_ps(half(static_cast<uint16_t>(_pext_u64(words, 0xf000f000f000f000ull))) * 0.125f);
  }
};

}  // namespace

const GemvFn gemv_iq1_m = gemv<Grid8Step<IQ1M>>;
const PanelDecodeFn panel_iq1_m = decode_panel<Grid8Panel<IQ1M>>;

}  // namespace ggufmm::kernels::avx512
