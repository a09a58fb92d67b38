// The format registry: one row per tensor type, as ggml's type-traits table.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "format/blocks.hpp"
#include "ggufmm/types.hpp"

namespace ggufmm::format {

// Up to 256 values as integers (a block, or a run of 32-value blocks), decoded without rounding: value i is
// scale[i / 16] * q[i] - offset[i / 16], computed in f32 in that order, which is exactly ggml's dequantization.
// Scales and offsets are kept per 16 values, the finest grain any format has (the 32-value formats repeat
// theirs); offset is zero for symmetric formats and is the exact f32 term of the asymmetric ones (w = d * q - m),
// never rounded into an integer zero point.
struct Int8Block {
  static constexpr int kSubBlock = 16;
  int8_t q[kQK_K];
  float scale[kQK_K / kSubBlock];
  float offset[kQK_K / kSubBlock];
};
using DecodeFn = void (*)(const void* block, Int8Block& out);
// `count` consecutive blocks (at most 256 values) into one Int8Block, block i from value i * block size: one call
// where decoding a whole row takes many (the 32-value formats' blocks are small).
using DecodeRunFn = void (*)(const void* blocks, int count, Int8Block& out);

// Both work on whole blocks: n is a multiple of the format's block size.
using DequantizeFn = void (*)(const void* blocks, float* out, int64_t n);
using QuantizeFn = void (*)(const float* in, void* blocks, int64_t n);

struct Format {
  TypeInfo info;
  DequantizeFn dequantize;  // null for the integer types, which are data, not weights
  QuantizeFn quantize;      // null where the format needs an importance-matrix search (IQ1, IQ2, IQ3)
  DecodeFn decode;          // null for the float and integer types
  DecodeRunFn decode_run;   // null where decode is
};

const Format* find(Type type);
const Format* find(std::string_view name);  // case-insensitive
std::span<const Format> all();

}  // namespace ggufmm::format
