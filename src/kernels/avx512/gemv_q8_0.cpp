// Q8_0 x int8 activations, AVX-512 VNNI: two blocks (64 values) per step.
#include "format/blocks.hpp"
#include "kernels/avx512/gemv.hpp"
#include "kernels/avx512/kernels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct Q8_0 {
  static constexpr int kBlockValues = 32;
  static constexpr int kBlocksPerStep = 2;

  template <int NR, int Blocks>
  static void step(const uint8_t* row, int64_t i, const Activations& x, __m512 (&acc)[NR]) {
    const auto* b = reinterpret_cast<const format::BlockQ8_0*>(row) + i / 32;
    __m512i w = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs)));
    __m512 dw = _mm512_set1_ps(half(b[0].d));
    if constexpr (Blocks == 2) {
      w = _mm512_inserti64x4(w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)), 1);
      dw = two_halves(b[0].d, b[1].d);
    }
    const __m512i w_abs = _mm512_abs_epi8(w);
    const __mmask64 w_negative = _mm512_movepi8_mask(w);
    for (int r = 0; r < NR; ++r) {
      const __m512i isum = dot_signed(_mm512_setzero_si512(), w_abs, w_negative, load_act<Blocks>(x, r, i));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, group_scales<Blocks>(x, r, i / 32)), acc[r]);
    }
  }
};

}  // namespace

const GemvFn gemv_q8_0 = gemv<Q8_0>;

}  // namespace ggufmm::kernels::avx512
