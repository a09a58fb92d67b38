// Q8_0 x int8 activations, AVX-512 VNNI: four blocks a step (groups.hpp), the signed levels made unsigned
// by flipping their top bit (level + 128).
#include <cstddef>

#include "format/blocks.hpp"
#include "kernels/avx512/block32.hpp"
#include "kernels/avx512/groups.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct Q8_0 {
  static constexpr bool kHasMin = false;
  static constexpr int kBlockValues = 32;
  static constexpr int kUnitValues = kStepValues;
  static constexpr int kBlockBytes = sizeof(format::BlockQ8_0);
  static constexpr int kUnitBytes = kStepGroups * kBlockBytes;
  static constexpr int kBias[kStepGroups] = {128, 128, 128, 128};
  static constexpr int kScaleAt = offsetof(format::BlockQ8_0, d);

  // The codes of blocks `first` and `first` + 1 from p: 64 values in order (lanes lo, hi, lo, hi).
  static __m512i pair(const uint8_t* p, int first) {
    constexpr int q = offsetof(format::BlockQ8_0, qs);
    const auto qs = [&](int block) {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + q + block * kBlockBytes));
    };
    return _mm512_inserti64x4(_mm512_castsi256_si512(qs(first)), qs(first + 1), 1);
  }

  struct Unit {
    StepWeights w;

    explicit Unit(const uint8_t* p) {
      constexpr int b = kBlockBytes;
      const __m512i a = pair(p, 0), c = pair(p, 2);
      const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
      w.lo = _mm512_xor_si512(_mm512_shuffle_i64x2(a, c, 0x88), flip);
      w.hi = _mm512_xor_si512(_mm512_shuffle_i64x2(a, c, 0xdd), flip);
      __m512 scales[1];
      gather_halves<kScaleAt, kScaleAt + b, kScaleAt + 2 * b, kScaleAt + 3 * b>(p, scales);
      w.scale = scales[0];
    }
    template <int S>
    const StepWeights& step() const {
      return w;
    }
  };
};

// Panels take the code bytes as stored (panel_decoder.hpp): code dword c is values 4c..4c+3.
struct Q8_0Panel : GroupPanel<Q8_0> {
  static constexpr int kBits = 8;
  static const uint8_t* piece(const uint8_t* p, int i) {
    return p + i / 2 * Q8_0::kBlockBytes + offsetof(format::BlockQ8_0, qs) + 16 * (i % 2);
  }
  static constexpr int chunk(int c, int) { return c; }
  static __m512i codes(__m512i bytes) { return _mm512_xor_si512(bytes, _mm512_set1_epi8(static_cast<char>(0x80))); }
};

}  // namespace

const GemvFn gemv_q8_0 = gemv_groups<Q8_0>;
const PanelDecodeFn panel_q8_0 = decode_panel<Q8_0Panel>;

}  // namespace ggufmm::kernels::avx512
