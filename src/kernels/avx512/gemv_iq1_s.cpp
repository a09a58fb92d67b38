// IQ1_S x int8 activations, AVX-512 VNNI: per run an 11-bit index into a grid of -1/0/+1 values; per group of 32
// a 16-bit word with the high index bits, a 3-bit scale and the sign of the delta every value of the group gets.

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/grid8.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// A value is d * (2s + 1) * (g + delta) with delta = +-1/8. The kernel multiplies u = g + 1 >= 0 and drops
// (1 - delta) times the activation sum of each half of the group.
struct IQ1S {
  using Block = format::BlockIQ1_S;
  static constexpr Grid8Form kForm = Grid8Form::Offset;
  static constexpr int kScaleValues = 32;
  static constexpr int kPairings = 2;  // |u x| <= 2 * 127: runs of 8 fit int16
  static constexpr int kBlocksPerStep = 1;

  const Block& b;
  __m256i h;  // the 8 group words

  explicit IQ1S(const Block& block)
      : b(block), h(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh)))) {}

  template <int C>
  __m512i weights() const {
    // 3 high index bits per run in its group's word of qh.
    const __m512i g = grid_runs(format::kIQ1SGrid,
                                [&](int j) { return b.qs[8 * C + j] | (b.qh[2 * C + j / 4] >> 3 * (j % 4) & 7) << 8; });
    return _mm512_add_epi8(g, _mm512_set1_epi8(1));
  }
  __m256i odd() const {  // 2s + 1 from bits 12-14
    return _mm256_ternarylogic_epi32(_mm256_srli_epi32(h, 11), _mm256_set1_epi32(0xe), _mm256_set1_epi32(1), 0xea);
  }
  __m512i scales() const { return _mm512_castsi256_si512(odd()); }
  __m256 unit() const { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(b.d))); }
  __m512 offsets() const {
    // Bit 15 is the delta's sign: 1 + 1/8 where the delta is negative, 1 - 1/8 where it is positive.
    const __m256 o = _mm256_blendv_ps(_mm256_set1_ps(0.875f), _mm256_set1_ps(1.125f),
                                      _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
    const __m256 per_group = _mm256_mul_ps(o, _mm256_cvtepi32_ps(odd()));
    return _mm512_permutexvar_ps(halves_of_groups(), _mm512_castps256_ps512(per_group));
  }
};

// A block as a panel run (panel_decoder.hpp), symmetric, in eighths as the portable decoder has it: q = 8g + 1 where
// the group's delta is positive, 8g - 1 where it is negative, and the scale d (2s + 1) / 8 (exact: a power of two
// apart from ggml's d (2s + 1), whose product with g + delta it equals).
struct IQ1SPanel {
  static constexpr int kBlockValues = 256;
  static constexpr int kRunBytes = sizeof(format::BlockIQ1_S);
  static constexpr bool kOffsets = false;
  static void decode(const uint8_t* p, __m512i (&q)[4], __m512& scales, __m512& offsets) {
    const IQ1S c(*reinterpret_cast<const format::BlockIQ1_S*>(p));
    unroll<4>([&]<int C>() {
      // Chunk C holds groups 2C (bytes 0-31) and 2C + 1; bit 15 of a group's word is its delta's sign.
      const __mmask64 negative = (c.b.qh[2 * C] >> 15 ? 0xffffffffull : 0) |
                                 (c.b.qh[2 * C + 1] >> 15 ? 0xffffffff00000000ull : 0);
      const __m512i eight_u = _mm512_slli_epi16(c.weights<C>(), 3);  // 8(g + 1), at most 16: no carry
      q[C] = _mm512_add_epi8(eight_u, _mm512_mask_blend_epi8(negative, _mm512_set1_epi8(-7), _mm512_set1_epi8(-9)));
    });
    scales = _mm512_mul_ps(grid8_sub_scales(c), _mm512_set1_ps(0.125f));  // exact: a power of two
    offsets = _mm512_setzero_ps();
  }
};

}  // namespace

const GemvFn gemv_iq1_s = gemv<Grid8Step<IQ1S>>;
const PanelDecodeFn panel_iq1_s = decode_panel<IQ1SPanel>;

}  // namespace ggufmm::kernels::avx512
