// IQ2_S x int8 activations, AVX2 / AVX-VNNI: per run a 10-bit grid index (low 8 bits in qs, 2 in qh) and 8
// explicit sign bits, a 4-bit scale per 16 values.
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx2/grid8.hpp"
#include "kernels/avx2/kernels.hpp"

namespace ggufmm::kernels::GGUFMM_LEVEL {
namespace {

struct IQ2S {
  using Block = format::BlockIQ2_S;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 16;
  struct Scratch {
    alignas(32) uint16_t index[32];
  };

  const Block& b;
  __m256i halves[2];
  const Scratch& m;

  IQ2S(const Block& block, Scratch& scratch) : b(block), m(scratch) {
    // Run r's 2 high bits are bits 2(r % 4) of qh[r / 4]: copy that byte to the run's word, keep the field and
    // multiply it up to bits 8-9.
    const __m256i qh = _mm256_broadcastsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qh)));
    const __m256i field = _mm256_set1_epi64x(0x00c00030000c0003);
    const __m256i up = _mm256_set1_epi64x(0x0004001000400100);
    for (int half = 0; half < 2; ++half) {
      const char q0 = static_cast<char>(4 * half), q1 = static_cast<char>(4 * half + 1);
      const char q2 = static_cast<char>(4 * half + 2), q3 = static_cast<char>(4 * half + 3);
      const __m256i spread = _mm256_setr_epi8(q0, -1, q0, -1, q0, -1, q0, -1, q1, -1, q1, -1, q1, -1, q1, -1, q2, -1, q2,
                                              -1, q2, -1, q2, -1, q3, -1, q3, -1, q3, -1, q3, -1);
      const __m256i high = _mm256_mullo_epi16(_mm256_and_si256(_mm256_shuffle_epi8(qh, spread), field), up);
      const __m256i low = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * half)));
      _mm256_store_si256(reinterpret_cast<__m256i*>(scratch.index + 16 * half), _mm256_or_si256(low, high));
    }
    odd_nibble_scales(b.scales, halves);
  }

  __m256i weights(int g) const { return grid_runs(format::kIQ2SGrid, m.index + 4 * g); }
  __m256i signs(int g) const {  // the sign bytes follow the index bytes
    uint32_t bits;
    std::memcpy(&bits, b.qs + 32 + 4 * g, sizeof bits);
    return plus_minus_one(bits);
  }
  __m256 scales() const { return eighth_of_half(b.d); }
  __m256i half_scales(int g) const { return group_halves(halves, g); }
};

}  // namespace

const GemvFn gemv_iq2_s = gemv<Grid8Step<IQ2S>>;

}  // namespace ggufmm::kernels::GGUFMM_LEVEL
