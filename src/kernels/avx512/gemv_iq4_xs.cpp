// IQ4_XS x int8 activations, AVX-512 VNNI: one super-block (8 groups of 32 values with 6-bit scales) per unit.
#include <immintrin.h>

#include <cstddef>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/gemv.hpp"
#include "kernels/avx512/gemv_nibble.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/iq4.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct IQ4XS {
  static constexpr int kUnitValues = 256;
  static constexpr int kSteps = 2;
  static constexpr int kUnitBytes = sizeof(format::BlockIQ4_XS);
  static constexpr const int8_t (&kLevels)[16] = format::kIQ4Values;
  static constexpr int kBias = 128;

  // The 16 code bytes of group g: byte j holds values j and 16 + j.
  static const uint8_t* group_codes(const uint8_t* p, int g) { return p + offsetof(format::BlockIQ4_XS, qs) + 16 * g; }

  static void decode(const uint8_t* row, int64_t u, NibbleWeights (&w)[kSteps]) {
    const auto& b = reinterpret_cast<const format::BlockIQ4_XS*>(row)[u];
    // Groups 0-3 and 4-7 are 64 contiguous code bytes each: transpose their dwords (dword 4L + g from 4g + L).
    const __m512i transpose = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    w[0].codes = _mm512_permutexvar_epi32(transpose, _mm512_loadu_si512(b.qs));
    w[1].codes = _mm512_permutexvar_epi32(transpose, _mm512_loadu_si512(b.qs + 64));
    // Each step's 4 scales repeated in every 128-bit lane: broadcast loads through memory cost no shuffles (the
    // empty asm keeps the compiler from turning them back into register shuffles).
    alignas(32) float scales[8];
    _mm256_store_ps(scales, iq4_xs_group_scales(b));
    __asm__("" : "+m"(scales));
    w[0].scale = _mm512_broadcast_f32x4(_mm_load_ps(scales));
    w[1].scale = _mm512_broadcast_f32x4(_mm_load_ps(scales + 4));
  }
};

}  // namespace

const GemvFn gemv_iq4_xs = gemv_nibble<IQ4XS>;
const PanelDecodeFn panel_iq4_xs = panel_rows<NibblePanel<IQ4XS>>;

}  // namespace ggufmm::kernels::avx512
