// TQ2_0 x int8 activations, AVX-512 VNNI: a block is two steps of 128 values (groups.hpp). Byte j of a
// 32-byte half holds value j of its four groups, group g in bits 2g..2g+1: broadcast to every lane, lane g keeps
// its group's bits in place (the code times 4^g) with one AND, and its scale is divided by 4^g to match.
#include "format/blocks.hpp"
#include "kernels/avx512/groups.hpp"
#include "kernels/avx512/kernels.hpp"
#include "kernels/avx512/panels.hpp"

namespace ggufmm::kernels::avx512 {
namespace {

struct TQ2_0 {
  static constexpr bool kHasMin = false;
  static constexpr int kBlockValues = 256;
  static constexpr int kUnitValues = 256;
  static constexpr int kUnitBytes = sizeof(format::BlockTQ2_0);
  static constexpr int kBias[kStepGroups] = {1, 4, 16, 64};  // level + 1 is the code, times 4^g

  struct Unit {
    const uint8_t* p;
    __m512 scale;

    explicit Unit(const uint8_t* block) : p(block) {
      uint16_t d;
      std::memcpy(&d, p + offsetof(format::BlockTQ2_0, d), sizeof d);
      const __m512 inverse = _mm512_set_ps(0x1p-6f, 0x1p-6f, 0x1p-6f, 0x1p-6f, 0x1p-4f, 0x1p-4f, 0x1p-4f, 0x1p-4f,
                                           0x1p-2f, 0x1p-2f, 0x1p-2f, 0x1p-2f, 1.0f, 1.0f, 1.0f, 1.0f);
      scale = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_set1_epi16(static_cast<short>(d))), inverse);
    }
    template <int S>
    StepWeights step() const {
      const __m512i keep = _mm512_set_epi32(0xc0c0c0c0, 0xc0c0c0c0, 0xc0c0c0c0, 0xc0c0c0c0, 0x30303030, 0x30303030,
                                            0x30303030, 0x30303030, 0x0c0c0c0c, 0x0c0c0c0c, 0x0c0c0c0c, 0x0c0c0c0c,
                                            0x03030303, 0x03030303, 0x03030303, 0x03030303);
      const auto half = [&](int at) {
        return _mm512_and_si512(_mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at))), keep);
      };
      return {half(32 * S), half(32 * S + 16), scale};
    }
  };
};

// A block as a panel run (panel_decoder.hpp) of its code bytes: byte m of 32-byte strip j holds values
// 128j + 32f + m in bits 2f, 2f + 1, the level + 1; the block's scale d for every 16 values (ggml's level * d).
struct TQ2Panel {
  static constexpr int kBlockValues = 256;
  static constexpr int kRunBytes = sizeof(format::BlockTQ2_0);
  static constexpr bool kOffsets = false;
  static constexpr int kBits = 2;
  static const uint8_t* piece(const uint8_t* p, int i) { return p + offsetof(format::BlockTQ2_0, qs) + 16 * i; }
  static constexpr int chunk(int c, int f) { return 32 * (c / 8) + 8 * f + c % 8; }
  static __m512i codes(__m512i fields) { return _mm512_add_epi8(fields, _mm512_set1_epi8(127)); }  // level + 128
  static void factors(const uint8_t* p, __m512& scales, __m512& offsets) {
    scales = _mm512_broadcastss_ps(_mm512_castps512_ps128(TQ2_0::Unit(p).scale));  // lane 0's factor is 1
    offsets = _mm512_setzero_ps();
  }
};

}  // namespace

const GemvFn gemv_tq2_0 = gemv_groups<TQ2_0>;
const PanelDecodeFn panel_tq2_0 = decode_panel<TQ2Panel>;

}  // namespace ggufmm::kernels::avx512
