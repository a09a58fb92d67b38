// IQ2_XS x int8 activations, AVX-512 VNNI: per run a 16-bit word (9-bit grid index, 7 sign bits), a 4-bit scale
// per 16 values. Grid words looked up in registers below 4 activation rows and in the panels, from scalar loads
// from 4 rows (grid_codes.hpp).
#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/grid8.hpp"
#include "kernels/avx512/grid_codes.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

enum class Grid { Lookup, Loads };

template <Grid G>
struct IQ2XS {
  using Block = format::BlockIQ2_XS;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 16;
  static constexpr int kPairings = 1;
  static constexpr int kBlocksPerStep = 2;

  const Block& b;
  // The sign masks of the 4 chunks, read back with kmov from memory (cheaper than moving them over from general
  // registers).
  struct Scratch {
    alignas(32) uint64_t signs[4];
  };
  Scratch& m;
  __m512i codes;  // Lookup: the 32 runs' codes (the sign bits above the index are ignored)

  IQ2XS(const Block& block, Scratch& scratch) : b(block), m(scratch) {
    const __m512i q = load_weights_512(b.qs);
    _mm256_store_si256(reinterpret_cast<__m256i*>(m.signs), complete_signs(_mm512_cvtepi16_epi8(_mm512_srli_epi16(q, 9))));
    asm("" : "+m"(m.signs));  // keeps the loads below
    if constexpr (G == Grid::Lookup) codes = kCodes.lookup(q);
  }

  template <int C>
  __m512i weights() const {
    if constexpr (G == Grid::Lookup) {
      return kCodes.values<C>(codes);
    } else {
      return grid_runs(format::kIQ2XSGrid, [&](int j) { return b.qs[8 * C + j] & 511; });
    }
  }
  template <int C>
  __mmask64 negative() const {
    return m.signs[C];
  }
  __m512i scales() const { return odd_nibble_scales(b.scales); }
  __m256 unit() const { return eighth_of_half(b.d); }

  static constexpr Grid8Codes<512> kCodes{format::kIQ2XSGrid, format::kIQ2Levels};
};

}  // namespace

const GemvFn gemv_iq2_xs = gemv<Grid8Step<IQ2XS<Grid::Lookup>, IQ2XS<Grid::Loads>, 4>>;
const PanelDecodeFn panel_iq2_xs = decode_panel<Grid8Panel<IQ2XS<Grid::Lookup>>>;

}  // namespace ggufmm::kernels::avx512
