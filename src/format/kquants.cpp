// The K-quants. The decoders give each block's exact integers, from which dequantization reproduces ggml bit for
// bit: each sub-block's scale (and min) is multiplied by the super-block's half-precision scale first, rounded to
// f32, and only then applied to the levels, so scale = d * sc and offset = dmin * m are ggml's own intermediates.
// (Q2_K alone folds its scales into the levels instead, which is the same product: see there.)
// The quantizers are ggml's reference ones: search each sub-block's scale, quantize those scales against their
// maximum, then requantize the values with the scales as stored.
#include "format/kquants.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "format/blocks.hpp"
#include "format/decoded.hpp"
#include "format/fp16.hpp"
#include "format/quant_search.hpp"

namespace ggufmm::format {
namespace {

// value = (d * scale) * level - (dmin * min), per sub-block of Sub values; levels(q) writes the 256 levels.
template <int Sub, class ScaleMin, class Levels>
void decode_affine(float d, float dmin, ScaleMin scale_min, Levels levels, Int8Block& out) {
  constexpr int kSubs = Sub / Int8Block::kSubBlock;
  for (int j = 0; j < kQK_K / Sub; ++j) {
    const auto [scale, min] = scale_min(j);
    set_sub_blocks(out, j * kSubs, kSubs, d * scale, dmin * min);
  }
  levels(out.q);
}

// value = (d * scale) * level, with signed scales and levels, per sub-block of 16 values.
template <class Scale, class Levels>
void decode_signed(float d, Scale scale, Levels levels, Int8Block& out) {
  for (int j = 0; j < kQK_K / 16; ++j) set_sub_blocks(out, j, 1, d * scale(j));
  levels(out.q);
}

// q[i] = (q[i] | high[i] << shift) - bias: a level's top bits, stored apart, joined to its low ones.
template <int Shift, int Bias>
void join_high_bits(int8_t* q, const int8_t* high) {
  for (int i = 0; i < kQK_K; ++i) q[i] = static_cast<int8_t>((q[i] | high[i] << Shift) - Bias);
}

// Requantizes sub-block j against its scale d and min dm as stored: level round((x + dm) / d) in [lo, hi], kept as
// level - lo. A zero scale keeps the levels of the search (they are multiplied by zero anyway).
template <int Sub>
void requantize(const float* x, int j, float d, float dm, int lo, int hi, uint8_t* levels) {
  if (d == 0) return;
  for (int i = j * Sub; i < (j + 1) * Sub; ++i) {
    levels[i] = static_cast<uint8_t>(std::clamp(nearest_int((x[i] + dm) / d), lo, hi) - lo);
  }
}

// ---- Q2_K: 16 sub-blocks of 16; a byte per sub-block holds its 4-bit scale (low) and min (high).

// The 4-bit scale multiplies the 2-bit level, sc * q <= 45, leaving d as the scale of every sub-block, so that
// tile panels take one scale per block (kernels/tile.hpp). The value is ggml's all the same: d * sc is exact in
// f32 (an 11-bit significand times a 4-bit integer), and so is its product with q.
void decode(const BlockQ2_K& b, Int8Block& out) {
  const float d = fp16_to_f32(b.d), dmin = fp16_to_f32(b.dmin);
  Strips<2, 32>::unpack(b.qs, kQK_K, out.q);
  for (int j = 0; j < kQK_K / 16; ++j) {
    set_sub_blocks(out, j, 1, d, dmin * static_cast<float>(b.scales[j] >> 4));
    for (int i = 16 * j; i < 16 * (j + 1); ++i) out.q[i] = static_cast<int8_t>(out.q[i] * (b.scales[j] & 0xf));
  }
}

void encode(const float* x, BlockQ2_K& b) {
  constexpr int kSubs = kQK_K / 16;
  uint8_t levels[kQK_K];
  float scales[kSubs], mins[kSubs];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSubs; ++j) {
    float weights[16];
    for (int i = 0; i < 16; ++i) weights[i] = std::fabs(x[16 * j + i]);
    const AffineFit fit = search_affine({x + 16 * j, 16}, weights, 3, {-0.5f, 0.1f, 15, true}, levels + 16 * j);
    scales[j] = fit.scale;
    mins[j] = fit.offset;
    if (fit.scale > max_scale) max_scale = fit.scale;
    if (fit.offset > max_min) max_min = fit.offset;
  }
  // Scales and mins become 4-bit multiples of d and dmin; the largest of each maps to 15.
  for (int j = 0; j < kSubs; ++j) {
    const int ls = max_scale > 0 ? std::clamp(nearest_int(15 / max_scale * scales[j]), 0, 15) : 0;
    const int lm = max_min > 0 ? std::clamp(nearest_int(15 / max_min * mins[j]), 0, 15) : 0;
    b.scales[j] = static_cast<uint8_t>(ls | lm << 4);
  }
  b.d = f32_to_fp16(saturate_fp16(max_scale > 0 ? max_scale / 15 : 0.0f));
  b.dmin = f32_to_fp16(saturate_fp16(max_min > 0 ? max_min / 15 : 0.0f));
  for (int j = 0; j < kSubs; ++j) {
    requantize<16>(x, j, fp16_to_f32(b.d) * (b.scales[j] & 0xf), fp16_to_f32(b.dmin) * (b.scales[j] >> 4), 0, 3,
                   levels);
  }
  Strips<2, 32>::put(levels, kQK_K, b.qs);
}

// ---- Q3_K: 16 sub-blocks of 16; 6-bit scales biased by 32, low nibbles in bytes 0-7, top two bits in 8-11;
// levels biased by 4, low two bits in qs and the third in hmask.

int q3_scale(const uint8_t* s, int j) {
  return (((s[j % 8] >> (4 * (j / 8))) & 0xf) | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
}

void decode(const BlockQ3_K& b, Int8Block& out) {
  decode_signed(
      fp16_to_f32(b.d), [&](int j) { return q3_scale(b.scales, j); },
      [&](int8_t* q) {
        int8_t high[kQK_K];
        Strips<2, 32>::unpack(b.qs, kQK_K, q);
        Strips<1, 32>::unpack(b.hmask, kQK_K, high);
        join_high_bits<2, 4>(q, high);
      },
      out);
}

void encode(const float* x, BlockQ3_K& b) {
  constexpr int kSubs = kQK_K / 16;
  uint8_t levels[kQK_K];
  float scales[kSubs];
  float max_scale = 0, amax = 0;
  for (int j = 0; j < kSubs; ++j) {
    scales[j] = refine_symmetric_scale({x + 16 * j, 16}, 4, levels + 16 * j);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  std::fill_n(b.scales, 12, uint8_t{0});
  if (max_scale != 0) {
    // The scale of largest magnitude maps to -32, so the others fit [-32, 31] whatever their signs.
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < kSubs; ++j) {
      const int l = std::clamp(nearest_int(iscale * scales[j]), -32, 31) + 32;
      b.scales[j % 8] |= static_cast<uint8_t>((l & 0xf) << (4 * (j / 8)));
      b.scales[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
    }
    b.d = f32_to_fp16(saturate_fp16(1 / iscale));
  } else {
    b.d = f32_to_fp16(0.0f);
  }
  for (int j = 0; j < kSubs; ++j) requantize<16>(x, j, fp16_to_f32(b.d) * q3_scale(b.scales, j), 0, -4, 3, levels);
  Strips<2, 32>::put(levels, kQK_K, b.qs);
  Strips<1, 32>::put(levels, kQK_K, b.hmask, 2);
}

// ---- Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins; low nibbles of the levels in qs, Q5_K's fifth
// bits in qh. Scales and mins of sub-blocks 0-3 are the low 6 bits of bytes 0-3 and 4-7; those of 4-7 are
// nibbles of bytes 8-11 with their top two bits in the spare top bits of bytes 0-3 and 4-7.

std::pair<int, int> k4_scale_min(const uint8_t* s, int j) {
  if (j < 4) return {s[j] & 63, s[j + 4] & 63};
  return {(s[j + 4] & 0xf) | (s[j - 4] >> 6) << 4, (s[j + 4] >> 4) | (s[j] >> 6) << 4};
}

void put_k4_scale_min(uint8_t* s, int j, int scale, int min) {
  if (j < 4) {
    s[j] = static_cast<uint8_t>(scale);
    s[j + 4] = static_cast<uint8_t>(min);
  } else {
    s[j + 4] = static_cast<uint8_t>((scale & 0xf) | (min & 0xf) << 4);
    s[j - 4] |= static_cast<uint8_t>((scale >> 4) << 6);
    s[j] |= static_cast<uint8_t>((min >> 4) << 6);
  }
}

template <class Block>
constexpr bool kHasFifthBit = requires(const Block& b) { b.qh; };

template <class Block>
void k_levels(const Block& b, int8_t* q) {
  Strips<4, 32>::unpack(b.qs, kQK_K, q);
  if constexpr (kHasFifthBit<Block>) {
    int8_t high[kQK_K];
    Strips<1, 32>::unpack(b.qh, kQK_K, high);
    join_high_bits<4, 0>(q, high);
  }
}

template <class Block>
void decode_k(const Block& b, Int8Block& out) {
  decode_affine<32>(
      fp16_to_f32(b.d), fp16_to_f32(b.dmin), [&](int j) { return k4_scale_min(b.scales, j); },
      [&](int8_t* q) { k_levels(b, q); }, out);
}

template <class Block>
void encode_k(const float* x, Block& b) {
  constexpr bool kFive = kHasFifthBit<Block>;
  constexpr int kMaxLevel = kFive ? 31 : 15;
  constexpr AffineSearch kSearch = kFive ? AffineSearch{-0.5f, 0.1f, 15, false} : AffineSearch{-1.f, 0.1f, 20, false};
  constexpr int kSubs = kQK_K / 32;
  uint8_t levels[kQK_K];
  float scales[kSubs], mins[kSubs];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kSubs; ++j) {
    const float* xs = x + 32 * j;
    // Weights favour large values, on top of the group's RMS.
    float sum_x2 = 0;
    for (int i = 0; i < 32; ++i) sum_x2 += xs[i] * xs[i];
    const float av_x = std::sqrt(sum_x2 / 32);
    float weights[32];
    for (int i = 0; i < 32; ++i) weights[i] = av_x + std::fabs(xs[i]);
    const AffineFit fit = search_affine({xs, 32}, weights, kMaxLevel, kSearch, levels + 32 * j);
    scales[j] = fit.scale;
    mins[j] = fit.offset;
    if (fit.scale > max_scale) max_scale = fit.scale;
    if (fit.offset > max_min) max_min = fit.offset;
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kSubs; ++j) {
    put_k4_scale_min(b.scales, j, std::clamp(nearest_int(inv_scale * scales[j]), 0, 63),
                     std::clamp(nearest_int(inv_min * mins[j]), 0, 63));
  }
  b.d = f32_to_fp16(saturate_fp16(max_scale / 63.f));
  b.dmin = f32_to_fp16(saturate_fp16(max_min / 63.f));
  for (int j = 0; j < kSubs; ++j) {
    const auto [scale, min] = k4_scale_min(b.scales, j);
    requantize<32>(x, j, fp16_to_f32(b.d) * scale, fp16_to_f32(b.dmin) * min, 0, kMaxLevel, levels);
  }
  Strips<4, 32>::put(levels, kQK_K, b.qs);
  if constexpr (kFive) Strips<1, 32>::put(levels, kQK_K, b.qh, 4);
}

void decode(const BlockQ4_K& b, Int8Block& out) { decode_k(b, out); }
void decode(const BlockQ5_K& b, Int8Block& out) { decode_k(b, out); }
void encode(const float* x, BlockQ4_K& b) { encode_k(x, b); }
void encode(const float* x, BlockQ5_K& b) { encode_k(x, b); }

// ---- Q6_K: 16 sub-blocks of 16 with int8 scales; levels biased by 32, low nibbles in ql, top two bits in qh.

void decode(const BlockQ6_K& b, Int8Block& out) {
  decode_signed(
      fp16_to_f32(b.d), [&](int j) { return b.scales[j]; },
      [&](int8_t* q) {
        int8_t high[kQK_K];
        Strips<4, 64>::unpack(b.ql, kQK_K, q);
        Strips<2, 32>::unpack(b.qh, kQK_K, high);
        join_high_bits<4, 32>(q, high);
      },
      out);
}

void encode(const float* x, BlockQ6_K& b) {
  constexpr int kSubs = kQK_K / 16;
  uint8_t levels[kQK_K];
  float scales[kSubs];
  float max_scale = 0, amax = 0;
  for (int j = 0; j < kSubs; ++j) {
    scales[j] = search_symmetric_scale({x + 16 * j, 16}, 32, levels + 16 * j);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  if (amax < 1e-15f) {
    b = BlockQ6_K{};
    return;
  }
  // The scale of largest magnitude maps to -128, so the others fit int8 whatever their signs.
  const float iscale = -128.f / max_scale;
  b.d = f32_to_fp16(saturate_fp16(1 / iscale));
  for (int j = 0; j < kSubs; ++j) {
    b.scales[j] = static_cast<int8_t>(std::clamp(nearest_int(iscale * scales[j]), -128, 127));
  }
  for (int j = 0; j < kSubs; ++j) requantize<16>(x, j, fp16_to_f32(b.d) * b.scales[j], 0, -32, 31, levels);
  Strips<4, 64>::put(levels, kQK_K, b.ql);
  Strips<2, 32>::put(levels, kQK_K, b.qh, 4);
}

// A row is n / 256 consecutive super-blocks.
template <class Block>
void encode_row(const float* in, void* blocks, int64_t n) {
  auto* b = static_cast<Block*>(blocks);
  for (int64_t i = 0; i < n / kQK_K; ++i) encode(in + i * kQK_K, b[i]);
}

}  // namespace

void decode_q2_K(const void* block, Int8Block& out) { decode(*static_cast<const BlockQ2_K*>(block), out); }
void decode_q3_K(const void* block, Int8Block& out) { decode(*static_cast<const BlockQ3_K*>(block), out); }
void decode_q4_K(const void* block, Int8Block& out) { decode(*static_cast<const BlockQ4_K*>(block), out); }
void decode_q5_K(const void* block, Int8Block& out) { decode(*static_cast<const BlockQ5_K*>(block), out); }
void decode_q6_K(const void* block, Int8Block& out) { decode(*static_cast<const BlockQ6_K*>(block), out); }
void quantize_q2_K(const float* in, void* blocks, int64_t n) { encode_row<BlockQ2_K>(in, blocks, n); }
void quantize_q3_K(const float* in, void* blocks, int64_t n) { encode_row<BlockQ3_K>(in, blocks, n); }
void quantize_q4_K(const float* in, void* blocks, int64_t n) { encode_row<BlockQ4_K>(in, blocks, n); }
void quantize_q5_K(const float* in, void* blocks, int64_t n) { encode_row<BlockQ5_K>(in, blocks, n); }
void quantize_q6_K(const float* in, void* blocks, int64_t n) { encode_row<BlockQ6_K>(in, blocks, n); }

}  // namespace ggufmm::format
