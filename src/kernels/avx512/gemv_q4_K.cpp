// Q4_K x int8 activations, AVX-512 VNNI: the K-quant driver over 4-bit codes with 6-bit scales and mins per 32.
#include <cstddef>

#include "format/blocks.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/kquant.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

// Panels transpose the code bytes (panel_decoder.hpp): 32 bytes hold values 64i..64i+31 in their low nibbles and the
// next 32 in their high nibbles.
struct Q4KPanel : KPanel<K4Format<format::BlockQ4_K>> {
  static constexpr int kBits = 4;
  static const uint8_t* piece(const uint8_t* p, int i) { return p + offsetof(format::BlockQ4_K, qs) + 16 * i; }
  static constexpr int chunk(int c, int f) { return 16 * (c / 8) + 8 * f + c % 8; }
  static __m512i codes(__m512i fields) { return _mm512_or_si512(fields, _mm512_set1_epi8(static_cast<char>(0x80))); }
};

}  // namespace

const GemvFn gemv_q4_K = gemv_k<K4Format<format::BlockQ4_K>>;
const PanelDecodeFn panel_q4_K = decode_panel<Q4KPanel>;

}  // namespace ggufmm::kernels::avx512
