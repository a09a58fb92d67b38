// MXFP4: 32 E2M1 values sharing one E8M0 exponent. As in ggml, the E2M1 values are kept doubled (as integers)
// and the exponent halved to match: those integers and that scale are the decoded block, and their product is
// ggml's dequantization bit for bit.
#include "format/fp4.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "format/blocks.hpp"
#include "format/decoded.hpp"
#include "format/nibble_codebook.hpp"
#include "format/quant_search.hpp"

namespace ggufmm::format {
namespace {

// 2^(e - 128): half the E8M0 value 2^(e - 127), which is subnormal in f32 for e < 2.
float e8m0_half(uint8_t e) {
  return std::bit_cast<float>(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

// The code whose value times d is nearest x; the first on ties.
uint8_t nearest_code(float x, float d) {
  uint8_t best = 0;
  float best_error = std::fabs(kMXFP4Values[0] * d - x);
  for (uint8_t c = 1; c < 16; ++c) {
    const float error = std::fabs(kMXFP4Values[c] * d - x);
    if (error < best_error) {
      best = c;
      best_error = error;
    }
  }
  return best;
}

}  // namespace

void decode_mxfp4(const void* block, Int8Block& out, int slot) {
  const auto& b = *static_cast<const BlockMXFP4*>(block);
  NibbleCodebook<kMXFP4Values>::decode32(b.qs, out.q + kQK * slot);
  constexpr int kSubs = kQK / Int8Block::kSubBlock;
  set_sub_blocks(out, kSubs * slot, kSubs, e8m0_half(b.e));
}

void quantize_mxfp4(const float* in, void* blocks, int64_t n) {
  auto* b = static_cast<BlockMXFP4*>(blocks);
  for (int64_t i = 0; i < n / kQK; ++i, in += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(in[j]));
    // For a largest magnitude of 2^E times [1, 2), e = E - 2 + 127 makes d = 2^(E - 3): the largest magnitude is
    // 8 to 16 times d, against codes that reach 12. Clamped: tiny inputs would go below the smallest exponent.
    const int e = amax > 0 ? clamp_to_int(std::floor(std::log2(amax)) - 2 + 127, 0, 255) : 0;
    b[i].e = static_cast<uint8_t>(e);
    const float d = e8m0_half(b[i].e);
    uint8_t codes[kQK];
    for (int j = 0; j < kQK; ++j) codes[j] = nearest_code(in[j], d);
    Strips<4, kQK / 2>::put(codes, kQK, b[i].qs);
  }
}

}  // namespace ggufmm::format
