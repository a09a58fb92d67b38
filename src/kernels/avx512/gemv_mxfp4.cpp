// MXFP4 x int8 activations, AVX-512 VNNI: four blocks a step (groups.hpp). The codes index the doubled E2M1
// values (plus a bias that makes them unsigned) with one byte shuffle per register; the scale is 2^(e - 128).
#include "format/blocks.hpp"
#include "format/fp4.hpp"
#include "kernels/avx512/block32.hpp"
#include "kernels/avx512/groups.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct MXFP4 {
  static constexpr bool kHasMin = false;
  static constexpr int kBlockValues = 32;
  static constexpr int kUnitValues = kStepValues;
  static constexpr int kBlockBytes = sizeof(format::BlockMXFP4);
  static constexpr int kUnitBytes = kStepGroups * kBlockBytes;
  static constexpr int kLevelBias = 12;  // the largest magnitude
  static constexpr int kBias[kStepGroups] = {kLevelBias, kLevelBias, kLevelBias, kLevelBias};
  static constexpr int kCodesAt = offsetof(format::BlockMXFP4, qs);

  // Panels (NibbleGroupPanel): the nibbles' levels plus 128.
  static __m512i panel_codes(__m512i nibbles) { return level_codes(format::kMXFP4Values, nibbles); }

  struct Unit {
    StepWeights w;

    explicit Unit(const uint8_t* p) {
      constexpr int q = offsetof(format::BlockMXFP4, qs), b = kBlockBytes;
      split_nibbles(gather_runs16<q, q + b, q + 2 * b, q + 3 * b>(p), w.lo, w.hi);
      const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(format::kMXFP4Values));
      const __m512i table = _mm512_broadcast_i32x4(_mm_add_epi8(levels, _mm_set1_epi8(kLevelBias)));
      w.lo = _mm512_shuffle_epi8(table, w.lo);
      w.hi = _mm512_shuffle_epi8(table, w.hi);
      // Exponent g is byte 17g of the unit, byte g of lane g: one in-lane shuffle (three zeroing 0x80 index bytes,
      // then byte g) moves it to the top byte of every dword of its lane. Shifted down one bit it is the exponent
      // field of 2^(e - 127), which e = 0 (zero there) gets as the subnormal 2^-127; halved, the E8M0 value's half,
      // as the levels are doubled.
      static_assert(offsetof(format::BlockMXFP4, e) == 0 && kBlockBytes == 17);
      constexpr auto top = [](int g) { return static_cast<int>(static_cast<unsigned>(g) << 24 | 0x808080u); };
      const __m512i lane_top = _mm512_set_epi32(top(3), top(3), top(3), top(3), top(2), top(2), top(2), top(2), top(1),
                                                top(1), top(1), top(1), top(0), top(0), top(0), top(0));
      const __m512i bits = _mm512_srli_epi32(_mm512_shuffle_epi8(load_weights_512(p), lane_top), 1);
      const __m512 power = _mm512_castsi512_ps(_mm512_max_epi32(bits, _mm512_set1_epi32(0x00400000)));
      w.scale = _mm512_mul_ps(power, _mm512_set1_ps(0.5f));
    }
    template <int S>
    const StepWeights& step() const {
      return w;
    }
  };
};

}  // namespace

const GemvFn gemv_mxfp4 = gemv_groups<MXFP4>;
const PanelDecodeFn panel_mxfp4 = decode_panel<NibbleGroupPanel<MXFP4>>;

}  // namespace ggufmm::kernels::avx512
