// IQ3_XXS x int8 activations, AVX-512 VNNI: the codebook step (Grid8Step), its grid words looked up as
// 16-bit codes in registers (grid_codes.hpp).
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/grid8.hpp"
#include "kernels/avx512/grid_codes.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// The 64 grid indices come first in qs; then one word per group: four 7-bit sign runs under a 4-bit scale s,
// which means (s + 1/2) * d / 2 = (2s + 1) * d / 4.
class IQ3XXS {
 public:
  using Block = format::BlockIQ3_XXS;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 32;
  static constexpr int kPairings = 1;  // 4 products (at most 62 * 127 each) fit int16; 8 do not
  static constexpr int kBlocksPerStep = 1;

  explicit IQ3XXS(const Block& b) : qs_(b.qs), d_(b.d) {
    words_ = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + kIndices));
    for (int p = 0; p < 2; ++p) {
      const __m256i indices = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * p));
      codes_[p] = kCodes.lookup(_mm512_cvtepu8_epi16(indices));
    }
  }

  template <int C>
  __m512i weights() const {
    return kCodes.values<C % 2>(codes_[C / 2]);
  }
  template <int C>
  __mmask64 negative() const {
    uint64_t words;
    std::memcpy(&words, qs_ + kIndices + 8 * C, sizeof words);
    // The sign words of groups 2C and 2C+1: their 7-bit runs one per byte (scalar bit moves leave the vector ports
    // to the dot products), then bit 7 of each byte set to the parity of the other seven: the quantizer keeps the
    // count of negatives in a run even.
    const uint64_t runs = _pdep_u64(_pext_u64(words, 0x0fffffff0fffffffull), 0x7f7f7f7f7f7f7f7full);
    uint64_t parity = runs ^ (runs << 4);
    parity ^= parity << 2;
    parity ^= parity << 1;
    return _cvtu64_mask64(runs | (parity & 0x8080808080808080ull));
  }
  __m512i scales() const {
    // words >> 27 is 2s plus a sign bit, which the 1 overwrites.
    return _mm512_zextsi256_si512(_mm256_or_si256(_mm256_srli_epi32(words_, 27), _mm256_set1_epi32(1)));
  }
  __m256 unit() const {
    return _mm256_mul_ps(_mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(d_))), _mm256_set1_ps(0.25f));
  }

 private:
  static constexpr int kIndices = 64;
  static constexpr uint8_t kLevels[8] = {4, 12, 20, 28, 36, 44, 52, 62};
  static constexpr Grid4Codes<256> kCodes{format::kIQ3XXSGrid, kLevels};

  const uint8_t* qs_;
  uint16_t d_;
  __m256i words_;
  __m512i codes_[2];  // of chunk pairs 0-1 and 2-3
};

}  // namespace

const GemvFn gemv_iq3_xxs = gemv<Grid8Step<IQ3XXS>>;
const PanelDecodeFn panel_iq3_xxs = decode_panel<Grid8Panel<IQ3XXS>>;

}  // namespace ggufmm::kernels::avx512
