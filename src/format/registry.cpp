#include "format/registry.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include "format/blocks.hpp"
#include "format/floats.hpp"
#include "format/fp4.hpp"
#include "format/iquants.hpp"
#include "format/kquants.hpp"
#include "format/legacy.hpp"
#include "format/ternary.hpp"

namespace ggufmm::format {
namespace {

template <class Block>
constexpr TypeInfo info_of(Type type, std::string_view name, bool is_weight, QuantizeFn quantize) {
  return {type, name, Block::kValues, static_cast<int32_t>(sizeof(Block)), is_weight, quantize != nullptr};
}

// Dequantization derived from a format's exact decoder: value i is scale * q - offset, Int8Block's definition
// (two roundings, as ggml's; the format library is built without contraction into fused multiply-adds).
template <class Block, DecodeFn Decode>
void dequantize_decoded(const void* blocks, float* out, int64_t n) {
  constexpr int kSub = Int8Block::kSubBlock;
  const auto* block = static_cast<const uint8_t*>(blocks);
  Int8Block b;
  for (int64_t i = 0; i < n / Block::kValues; ++i, block += sizeof(Block), out += Block::kValues) {
    Decode(block, b);
    for (int j = 0; j < Block::kValues; ++j) out[j] = b.scale[j / kSub] * b.q[j] - b.offset[j / kSub];
  }
}

// A 256-value block is a run of its own.
template <DecodeFn Decode>
void decode_alone(const void* block, int, Int8Block& out) {
  Decode(block, out);
}

// The 32-value formats decode a block into any of the 8 slots of an Int8Block (values 32 * slot..), so a run of
// blocks decodes in place, the decoder inlined.
using DecodeSlotFn = void (*)(const void* block, Int8Block& out, int slot);
template <DecodeSlotFn Decode>
void decode_first(const void* block, Int8Block& out) {
  Decode(block, out, 0);
}
template <class Block, DecodeSlotFn Decode>
void decode_slots(const void* blocks, int count, Int8Block& out) {
  const auto* block = static_cast<const uint8_t*>(blocks);
  for (int slot = 0; slot < count; ++slot, block += sizeof(Block)) Decode(block, out, slot);
}

// A quantized format: its exact int8 decoder, and dequantization derived from it.
template <class Block, auto Decode>
constexpr Format decoded(Type type, std::string_view name, QuantizeFn quantize) {
  if constexpr (Block::kValues == kQK) {
    return {info_of<Block>(type, name, true, quantize), dequantize_decoded<Block, decode_first<Decode>>, quantize,
            decode_first<Decode>, decode_slots<Block, Decode>};
  } else {
    static_assert(Block::kValues == kQK_K);
    return {info_of<Block>(type, name, true, quantize), dequantize_decoded<Block, Decode>, quantize, Decode,
            decode_alone<Decode>};
  }
}

// One row per line of GGUFMM_TYPES, each from the functions named after it.
#define GGUFMM_FLOAT_ROW(TYPE, id, name) \
  Format{info_of<Block##TYPE>(Type::TYPE, #name, true, quantize_##name), dequantize_##name, quantize_##name},
#define GGUFMM_QUANT_ROW(TYPE, id, name) decoded<Block##TYPE, decode_##name>(Type::TYPE, #name, quantize_##name),
#define GGUFMM_DATA_ROW(TYPE, id, name) Format{info_of<Block##TYPE>(Type::TYPE, #name, false, nullptr)},
const std::array kFormats = {GGUFMM_FLOAT_TYPES(GGUFMM_FLOAT_ROW) GGUFMM_QUANT_TYPES(GGUFMM_QUANT_ROW)
                                 GGUFMM_DATA_TYPES(GGUFMM_DATA_ROW)};
#undef GGUFMM_FLOAT_ROW
#undef GGUFMM_QUANT_ROW
#undef GGUFMM_DATA_ROW

bool iequal(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

const Format* find(Type type) {
  const auto it = std::ranges::find(kFormats, type, [](const Format& f) { return f.info.type; });
  return it == kFormats.end() ? nullptr : &*it;
}

const Format* find(std::string_view name) {
  const auto it = std::ranges::find_if(kFormats, [&](const Format& f) { return iequal(f.info.name, name); });
  return it == kFormats.end() ? nullptr : &*it;
}

std::span<const Format> all() { return kFormats; }

}  // namespace ggufmm::format

namespace ggufmm {

const TypeInfo* type_info(Type type) {
  const format::Format* f = format::find(type);
  return f ? &f->info : nullptr;
}

const TypeInfo* type_info(std::string_view name) {
  const format::Format* f = format::find(name);
  return f ? &f->info : nullptr;
}

std::vector<TypeInfo> all_types() {
  std::vector<TypeInfo> out;
  for (const auto& f : format::all()) out.push_back(f.info);
  return out;
}

size_t Weight::row_bytes() const {
  const format::Format* f = format::find(type);
  if (!f) return 0;
  return static_cast<size_t>(k / f->info.block_size) * static_cast<size_t>(f->info.block_bytes);
}

}  // namespace ggufmm
