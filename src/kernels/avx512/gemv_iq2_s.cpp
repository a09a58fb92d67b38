// IQ2_S x int8 activations, AVX-512 VNNI: per run a 10-bit grid index (low 8 bits in qs, 2 in qh) and 8
// explicit sign bits, a 4-bit scale per 16 values.
#include <cstring>

#include "format/blocks.hpp"
#include "format/iq_tables.hpp"
#include "kernels/avx512/grid8.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct IQ2S {
  using Block = format::BlockIQ2_S;
  static constexpr Grid8Form kForm = Grid8Form::Signed;
  static constexpr int kScaleValues = 16;
  static constexpr int kPairings = 1;
  static constexpr int kBlocksPerStep = 1;

  const Block& b;

  explicit IQ2S(const Block& block) : b(block) {}

  template <int C>
  __m512i weights() const {
    // 2 high index bits per run, 4 runs (a group) per byte of qh.
    return grid_runs(format::kIQ2SGrid,
                     [&](int j) { return b.qs[8 * C + j] | (b.qh[2 * C + j / 4] << (8 - 2 * (j % 4)) & 0x300); });
  }
  template <int C>
  __mmask64 negative() const {  // the sign bytes follow the index bytes
    uint64_t s;
    std::memcpy(&s, b.qs + 32 + 8 * C, sizeof s);
    return s;
  }
  __m512i scales() const { return odd_nibble_scales(b.scales); }
  __m256 unit() const { return eighth_of_half(b.d); }
};

}  // namespace

const GemvFn gemv_iq2_s = gemv<Grid8Step<IQ2S>>;
const PanelDecodeFn panel_iq2_s = decode_panel<Grid8Panel<IQ2S>>;

}  // namespace ggufmm::kernels::avx512
