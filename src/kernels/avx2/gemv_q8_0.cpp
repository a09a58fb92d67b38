// Q8_0 x int8 activations, AVX2 / AVX-VNNI: one block (32 values) per step.
#include "format/blocks.hpp"
#include "kernels/avx2/gemv.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct Q8_0 {
  static constexpr int kValues = 32;

  template <int NR>
  static void step(const uint8_t* row, int64_t i, const Activations& x, __m256 (&acc)[NR]) {
    const auto& b = reinterpret_cast<const format::BlockQ8_0*>(row)[i / 32];
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
    const float dw = half(b.d);
    for (int r = 0; r < NR; ++r) {
      const __m256i isum = dot_signed(_mm256_setzero_si256(), w, load_act(x, r, i));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(dw * act_scale(x, r, i / 32)), acc[r]);
    }
  }
};

}  // namespace

const GemvFn gemv_q8_0 = gemv<Q8_0>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
