// The 32-value formats. Q4_0/Q5_0 and Q4_1/Q5_1 differ only in a fifth bit per level (qh); the _1 formats add a
// min. The decoders give each block's exact integers: ggml's level * d (+ m) is scale * q - offset with q the
// level (re-centred for the symmetric formats) and offset = -m, the same float operations in the same order. The
// quantizers are ggml's reference ones.
#include "format/legacy.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "format/blocks.hpp"
#include "format/decoded.hpp"
#include "format/fp16.hpp"
#include "format/quant_search.hpp"
#include "format/swar.hpp"

namespace ggufmm::format {
namespace {

template <class Block>
constexpr bool kHasMin = requires(const Block& b) { b.m; };
template <class Block>
constexpr bool kHasFifthBit = requires(const Block& b) { b.qh; };
template <class Block>
constexpr int kBits = kHasFifthBit<Block> ? 5 : 4;

// Level j: the low nibble of byte j for the first 16, the high nibble of byte j - 16 for the rest; the fifth bit
// is bit j of the little-endian qh.
template <class Block>
void decode(const Block& b, Int8Block& out, int slot) {
  // The symmetric formats centre their levels on zero; the _1 formats keep them unsigned and add the min.
  constexpr int kBias = kHasMin<Block> ? 0 : 1 << (kBits<Block> - 1);
  constexpr uint64_t kNibbles = swar::kOnes * 0x0f, kMinusBias = swar::kOnes * ((256 - kBias) & 0xff);
  uint32_t qh = 0;
  if constexpr (kHasFifthBit<Block>) std::memcpy(&qh, b.qh, sizeof qh);
  // Eight levels at a time: values 8t.. from the low nibbles of bytes 8t.., values 16 + 8t.. from their high ones.
  for (int t = 0; t < 2; ++t) {
    const uint64_t bytes = swar::load(b.qs + 8 * t);
    const uint64_t fifth_lo = swar::byte_mask(qh >> (8 * t)) & swar::kOnes << 4;
    const uint64_t fifth_hi = swar::byte_mask(qh >> (8 * t + 16)) & swar::kOnes << 4;
    int8_t* q = out.q + kQK * slot;
    swar::store(q + 8 * t, swar::add_bytes((bytes & kNibbles) | fifth_lo, kMinusBias));
    swar::store(q + 16 + 8 * t, swar::add_bytes((bytes >> 4 & kNibbles) | fifth_hi, kMinusBias));
  }
  float offset = 0.0f;
  if constexpr (kHasMin<Block>) offset = -fp16_to_f32(b.m);
  constexpr int kSubs = kQK / Int8Block::kSubBlock;
  set_sub_blocks(out, kSubs * slot, kSubs, fp16_to_f32(b.d), offset);
}

void decode(const BlockQ8_0& b, Int8Block& out, int slot) {
  std::memcpy(out.q + kQK * slot, b.qs, kQK);  // memcpy, not copy_n: compilers inline it
  constexpr int kSubs = kQK / Int8Block::kSubBlock;
  set_sub_blocks(out, kSubs * slot, kSubs, fp16_to_f32(b.d));
}

template <class Block>
void encode(const float* x, Block& b) {
  constexpr int kMaxLevel = (1 << kBits<Block>) - 1;
  uint8_t levels[kQK];
  if constexpr (kHasMin<Block>) {
    // Levels span [min, max]. The min is stored as binary16 too, so it saturates before d is derived from it.
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (int j = 0; j < kQK; ++j) {
      lo = std::min(lo, x[j]);
      hi = std::max(hi, x[j]);
    }
    const float min = saturate_fp16(lo);
    const float d = saturate_fp16((hi - min) / kMaxLevel);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b.d = f32_to_fp16(d);
    b.m = f32_to_fp16(min);
    for (int j = 0; j < kQK; ++j) {
      levels[j] = static_cast<uint8_t>(clamp_to_int((x[j] - min) * id + 0.5f, 0, kMaxLevel));
    }
  } else {
    // The value of largest magnitude maps to the most negative level, -2^(bits-1), which has no positive twin.
    constexpr int kHalf = 1 << (kBits<Block> - 1);
    const float d = saturate_fp16(signed_absmax({x, kQK}) / -kHalf);
    const float id = d != 0 ? 1.0f / d : 0.0f;
    b.d = f32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) {
      levels[j] = static_cast<uint8_t>(clamp_to_int(x[j] * id + (kHalf + 0.5f), 0, kMaxLevel));
    }
  }
  Strips<4, kQK / 2>::put(levels, kQK, b.qs);
  if constexpr (kHasFifthBit<Block>) Strips<1, 1>::put(levels, kQK, b.qh, 4);
}

void encode(const float* x, BlockQ8_0& b) {
  float amax = 0;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = saturate_fp16(amax / 127);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  b.d = f32_to_fp16(d);
  for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(clamp_to_int(std::round(x[j] * id), -127, 127));
}

// A row is n / 32 consecutive blocks.
template <class Block>
void encode_row(const float* in, void* blocks, int64_t n) {
  auto* b = static_cast<Block*>(blocks);
  for (int64_t i = 0; i < n / kQK; ++i) encode(in + i * kQK, b[i]);
}

}  // namespace

void decode_q4_0(const void* block, Int8Block& out, int slot) {
  decode(*static_cast<const BlockQ4_0*>(block), out, slot);
}
void decode_q4_1(const void* block, Int8Block& out, int slot) {
  decode(*static_cast<const BlockQ4_1*>(block), out, slot);
}
void decode_q5_0(const void* block, Int8Block& out, int slot) {
  decode(*static_cast<const BlockQ5_0*>(block), out, slot);
}
void decode_q5_1(const void* block, Int8Block& out, int slot) {
  decode(*static_cast<const BlockQ5_1*>(block), out, slot);
}
void decode_q8_0(const void* block, Int8Block& out, int slot) {
  decode(*static_cast<const BlockQ8_0*>(block), out, slot);
}
void quantize_q4_0(const float* in, void* blocks, int64_t n) { encode_row<BlockQ4_0>(in, blocks, n); }
void quantize_q4_1(const float* in, void* blocks, int64_t n) { encode_row<BlockQ4_1>(in, blocks, n); }
void quantize_q5_0(const float* in, void* blocks, int64_t n) { encode_row<BlockQ5_0>(in, blocks, n); }
void quantize_q5_1(const float* in, void* blocks, int64_t n) { encode_row<BlockQ5_1>(in, blocks, n); }
void quantize_q8_0(const float* in, void* blocks, int64_t n) { encode_row<BlockQ8_0>(in, blocks, n); }

}  // namespace ggufmm::format
