// The ternary formats: each value is -1, 0 or +1 times the super-block's half-precision scale (its largest
// magnitude). TQ2_0 spends two bits per value; TQ1_0 packs five base-3 digits per byte (four in qh) as a
// fraction of 256, so that a digit is read with a multiplication, not a division. The decoders give the digits
// minus one with the scale, whose product is ggml's (digit - 1) * d bit for bit; the quantizers are ggml's
// reference ones.
#include "format/ternary.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "format/blocks.hpp"
#include "format/decoded.hpp"
#include "format/fp16.hpp"
#include "format/quant_search.hpp"

namespace ggufmm::format {
namespace {

// TQ1_0's value order: the digits of `width` consecutive bytes form `digits` runs of `width` values, most
// significant digit first. The block's bytes (qs, then qh) form three such groups.
struct DigitGroup {
  int first_byte;  // from the start of the block
  int width;
  int digits;
};
constexpr DigitGroup kTQ1Groups[] = {{0, 32, 5}, {32, 16, 5}, {48, 4, 4}};
static_assert(offsetof(BlockTQ1_0, qh) == 48 && sizeof(BlockTQ1_0::qs) == 48);

// The signed digit of x (-1, 0, +1) at inverse scale id, rounded half away from zero as lroundf does.
int ternary(float x, float id) { return clamp_to_int(std::round(x * id), -1, 1); }

struct Scale {
  float d;
  float id;
};
Scale absmax_scale(const float* x) {
  float amax = 0;
  for (int i = 0; i < kQK_K; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = saturate_fp16(amax);
  return {d, d != 0 ? 1.0f / d : 0.0f};
}

void decode(const BlockTQ1_0& b, Int8Block& out) {
  static constexpr uint8_t kPow3[] = {1, 3, 9, 27, 81};
  int8_t* q = out.q;
  for (const DigitGroup& g : kTQ1Groups) {
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&b) + g.first_byte;
    for (int n = 0; n < g.digits; ++n) {
      for (int m = 0; m < g.width; ++m) {
        // Multiplying by 3^n (mod 256) shifts digit n to the top; times 3, the integer part is that digit.
        const auto top = static_cast<uint8_t>(bytes[m] * kPow3[n]);
        *q++ = static_cast<int8_t>(((top * 3) >> 8) - 1);
      }
    }
  }
  set_sub_blocks(out, 0, kQK_K / Int8Block::kSubBlock, fp16_to_f32(b.d));
}

void encode(const float* x, BlockTQ1_0& b) {
  const auto [d, id] = absmax_scale(x);
  b.d = f32_to_fp16(d);
  for (const DigitGroup& g : kTQ1Groups) {
    uint8_t* bytes = reinterpret_cast<uint8_t*>(&b) + g.first_byte;
    for (int m = 0; m < g.width; ++m) {
      int q = 0;
      for (int n = 0; n < 5; ++n) q = 3 * q + (n < g.digits ? ternary(x[m + n * g.width], id) + 1 : 0);
      // q / 243 as a fraction of 256, rounded up so that multiplying by 3^n and 3 recovers each digit exactly.
      bytes[m] = static_cast<uint8_t>((q * 256 + 242) / 243);
    }
    x += g.width * g.digits;
  }
}

void decode(const BlockTQ2_0& b, Int8Block& out) {
  Strips<2, 32>::unpack(b.qs, kQK_K, out.q);
  for (int i = 0; i < kQK_K; ++i) out.q[i] = static_cast<int8_t>(out.q[i] - 1);
  set_sub_blocks(out, 0, kQK_K / Int8Block::kSubBlock, fp16_to_f32(b.d));
}

void encode(const float* x, BlockTQ2_0& b) {
  const auto [d, id] = absmax_scale(x);
  b.d = f32_to_fp16(d);
  uint8_t levels[kQK_K];
  for (int i = 0; i < kQK_K; ++i) levels[i] = static_cast<uint8_t>(ternary(x[i], id) + 1);
  Strips<2, 32>::put(levels, kQK_K, b.qs);
}

// A row is n / 256 consecutive super-blocks.
template <class Block>
void encode_row(const float* in, void* blocks, int64_t n) {
  auto* b = static_cast<Block*>(blocks);
  for (int64_t i = 0; i < n / kQK_K; ++i) encode(in + i * kQK_K, b[i]);
}

}  // namespace

void decode_tq1_0(const void* block, Int8Block& out) { decode(*static_cast<const BlockTQ1_0*>(block), out); }
void decode_tq2_0(const void* block, Int8Block& out) { decode(*static_cast<const BlockTQ2_0*>(block), out); }
void quantize_tq1_0(const float* in, void* blocks, int64_t n) { encode_row<BlockTQ1_0>(in, blocks, n); }
void quantize_tq2_0(const float* in, void* blocks, int64_t n) { encode_row<BlockTQ2_0>(in, blocks, n); }

}  // namespace ggufmm::format
