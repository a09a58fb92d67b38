// The format registry: one row per tensor type, as ggml's type-traits table.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "ggufmm/ggufmm.hpp"

namespace ggufmm::format {

// Both work on whole blocks: n is a multiple of the format's block size.
using DequantizeFn = void (*)(const void* blocks, float* out, int64_t n);
using QuantizeFn = void (*)(const float* in, void* blocks, int64_t n);

struct Format {
  TypeInfo info;
  DequantizeFn dequantize;  // null for the integer types, which are data, not weights
  QuantizeFn quantize;      // null where the format needs an importance-matrix search (IQ1, IQ2, IQ3)
};

const Format* find(Type type);
const Format* find(std::string_view name);  // case-insensitive
std::span<const Format> all();

}  // namespace ggufmm::format
