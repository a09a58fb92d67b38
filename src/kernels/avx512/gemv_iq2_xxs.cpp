// IQ2_XXS x int8 activations, AVX-512 VNNI: per group of 32, four 8-bit grid indices, then a word of four 7-bit
// sign indices under a 4-bit scale. Grid words looked up in registers (grid_codes.hpp).
#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/grid8.hpp"
#include "kernels/avx512/grid_codes.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct IQ2XXS {
  using Block = format::BlockIQ2_XXS;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 32;
  static constexpr int kPairings = 1;
  static constexpr int kBlocksPerStep = 2;

  const Block& b;
  __m512i codes;  // the 32 runs' codes
  __m256i aux;  // per group: four 7-bit sign indices, then the scale in bits 28-31
  // The sign masks of the 4 chunks, read back with kmov from memory (cheaper than moving them over from general
  // registers).
  struct Scratch {
    alignas(32) uint64_t signs[4];
  };
  Scratch& m;

  IQ2XXS(const Block& block, Scratch& scratch) : b(block), m(scratch) {
    // Each group is a word of four index bytes, then the aux word: look up the indices as words, collect the aux
    // words.
    const __m512i groups = load_weights_512(b.qs);
    const __m512i indices = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, -128, 1, -128, 2, -128, 3, -128, 8, -128, 9, -128, 10, -128, 11, -128));
    codes = kCodes.lookup(_mm512_shuffle_epi8(groups, indices));
    aux = _mm512_castsi512_si256(
        _mm512_permutexvar_epi32(_mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0), groups));
    // The four 7-bit fields of each aux word into its four bytes: fields 2-3 up to the high half, then fields 1
    // and 3 up to their own byte.
    const __m256i halves = _mm256_ternarylogic_epi32(_mm256_set1_epi32(0xffff), aux, _mm256_slli_epi32(aux, 2), 0xca);
    const __m256i bytes = _mm256_ternarylogic_epi32(_mm256_set1_epi32(0x00ff00ff), halves,
                                                    _mm256_slli_epi16(halves, 1), 0xca);
    _mm256_store_si256(reinterpret_cast<__m256i*>(m.signs),
                       complete_signs(_mm256_and_si256(bytes, _mm256_set1_epi8(0x7f))));
    asm("" : "+m"(m.signs));  // keeps the loads below
  }

  template <int C>
  __m512i weights() const {
    return kCodes.values<C>(codes);
  }
  template <int C>
  __mmask64 negative() const {
    return m.signs[C];
  }
  __m512i scales() const {  // 2s + 1 from the top 4 bits (bit 27 below them is or-ed away)
    return _mm512_castsi256_si512(_mm256_or_si256(_mm256_srli_epi32(aux, 27), _mm256_set1_epi32(1)));
  }
  __m256 unit() const { return eighth_of_half(b.d); }

  static constexpr Grid8Codes<256> kCodes{format::kIQ2XXSGrid, format::kIQ2Levels};
};

}  // namespace

const GemvFn gemv_iq2_xxs = gemv<Grid8Step<IQ2XXS>>;
const PanelDecodeFn panel_iq2_xxs = decode_panel<Grid8Panel<IQ2XXS>>;

}  // namespace ggufmm::kernels::avx512
