// IQ3_S x int8 activations, AVX-512 VNNI: the codebook step (Grid8Step), its grid words looked up as 16-bit
// codes in registers (grid_codes.hpp).
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/grid8.hpp"
#include "kernels/avx512/grid_codes.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// 9-bit grid indices (low bytes in qs; the ninth bit of index j of group g is bit j of qh[g]), the signs as plain
// bits, and a 4-bit scale s per group meaning (2s + 1) * d.
class IQ3S {
 public:
  using Block = format::BlockIQ3_S;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 32;
  static constexpr int kPairings = 2;  // magnitudes of at most 15: 8 products fit int16
  static constexpr int kBlocksPerStep = 2;

  explicit IQ3S(const Block& b) : b_(b) {
    for (int p = 0; p < 2; ++p) {
      // The ninth bit of run j's index is bit j of these 4 bytes of qh.
      uint32_t high;
      std::memcpy(&high, b_.qh + 4 * p, sizeof high);
      const __m512i low = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b_.qs + 32 * p)));
      codes_[p] = kCodes.lookup(_mm512_mask_add_epi16(low, _cvtu32_mask32(high), low, _mm512_set1_epi16(0x100)));
    }
  }

  template <int C>
  __m512i weights() const {
    return kCodes.values<C % 2>(codes_[C / 2]);
  }
  template <int C>
  __mmask64 negative() const {
    uint64_t bits;
    std::memcpy(&bits, b_.signs + 8 * C, sizeof bits);
    return _cvtu64_mask64(bits);
  }
  __m512i scales() const {
    uint32_t nibbles;
    std::memcpy(&nibbles, b_.scales, sizeof nibbles);
    const __m256i s = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(nibbles)),
                                        _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
    return _mm512_zextsi256_si512(  // (2s & 0x1e) | 1
        _mm256_ternarylogic_epi32(_mm256_slli_epi32(s, 1), _mm256_set1_epi32(0x1e), _mm256_set1_epi32(1), 0xea));
  }
  __m256 unit() const { return _mm256_cvtph_ps(_mm_set1_epi16(static_cast<short>(b_.d))); }

 private:
  static constexpr uint8_t kLevels[8] = {1, 3, 5, 7, 9, 11, 13, 15};
  static constexpr Grid4Codes<512> kCodes{format::kIQ3SGrid, kLevels};

  const Block& b_;
  __m512i codes_[2];  // of chunk pairs 0-1 and 2-3
};

}  // namespace

const GemvFn gemv_iq3_s = gemv<Grid8Step<IQ3S>>;
const PanelDecodeFn panel_iq3_s = decode_panel<Grid8Panel<IQ3S>>;

}  // namespace ggufmm::kernels::avx512
