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

constexpr Format weight(Type type, std::string_view name, int32_t block_size, int32_t block_bytes,
                        DequantizeFn dequantize, QuantizeFn quantize) {
  return {{type, name, block_size, block_bytes, true, quantize != nullptr}, dequantize, quantize, nullptr, nullptr};
}
// Dequantization derived from a format's exact decoder: value i is scale * q - offset, Int8Block's definition
// (two roundings, as ggml's; the format library is built without contraction into fused multiply-adds).
template <DecodeFn Decode, int32_t BlockSize, int32_t BlockBytes>
void dequantize_decoded(const void* blocks, float* out, int64_t n) {
  constexpr int kSub = Int8Block::kSubBlock;
  const auto* block = static_cast<const uint8_t*>(blocks);
  Int8Block b;
  for (int64_t i = 0; i < n / BlockSize; ++i, block += BlockBytes, out += BlockSize) {
    Decode(block, b);
    for (int j = 0; j < BlockSize; ++j) out[j] = b.scale[j / kSub] * b.q[j] - b.offset[j / kSub];
  }
}

// A quantized format with an exact int8 decoder, its dequantization derived from it. A 256-value block is a run
// of its own.
template <DecodeFn Decode>
void decode_alone(const void* block, int, Int8Block& out) {
  Decode(block, out);
}
template <DecodeFn Decode, int32_t BlockBytes>
constexpr Format decoded(Type type, std::string_view name, QuantizeFn quantize) {
  return {{type, name, kQK_K, BlockBytes, true, quantize != nullptr},
          dequantize_decoded<Decode, kQK_K, BlockBytes>,
          quantize,
          Decode,
          decode_alone<Decode>};
}

// The 32-value formats decode a block into any of the 8 slots of an Int8Block (values 32 * slot..), so a run of
// blocks decodes in place, the decoder inlined.
using DecodeSlotFn = void (*)(const void* block, Int8Block& out, int slot);
template <DecodeSlotFn Decode>
void decode_first(const void* block, Int8Block& out) {
  Decode(block, out, 0);
}
template <DecodeSlotFn Decode, int32_t BlockBytes>
void decode_slots(const void* blocks, int count, Int8Block& out) {
  const auto* block = static_cast<const uint8_t*>(blocks);
  for (int slot = 0; slot < count; ++slot, block += BlockBytes) Decode(block, out, slot);
}
template <DecodeSlotFn Decode, int32_t BlockBytes>
constexpr Format decoded32(Type type, std::string_view name, QuantizeFn quantize) {
  return {{type, name, kQK, BlockBytes, true, quantize != nullptr},
          dequantize_decoded<decode_first<Decode>, kQK, BlockBytes>,
          quantize,
          decode_first<Decode>,
          decode_slots<Decode, BlockBytes>};
}

constexpr Format data(Type type, std::string_view name, int32_t bytes) {
  return {{type, name, 1, bytes, false, false}, nullptr, nullptr, nullptr, nullptr};
}

const std::array kFormats = {
    weight(Type::F32, "f32", 1, 4, dequantize_f32, quantize_f32),
    weight(Type::F16, "f16", 1, 2, dequantize_f16, quantize_f16),
    weight(Type::BF16, "bf16", 1, 2, dequantize_bf16, quantize_bf16),
    decoded32<decode_q4_0, 18>(Type::Q4_0, "q4_0", quantize_q4_0),
    decoded32<decode_q4_1, 20>(Type::Q4_1, "q4_1", quantize_q4_1),
    decoded32<decode_q5_0, 22>(Type::Q5_0, "q5_0", quantize_q5_0),
    decoded32<decode_q5_1, 24>(Type::Q5_1, "q5_1", quantize_q5_1),
    decoded32<decode_q8_0, 34>(Type::Q8_0, "q8_0", quantize_q8_0),
    decoded<decode_q2_K, 84>(Type::Q2_K, "q2_K", quantize_q2_K),
    decoded<decode_q3_K, 110>(Type::Q3_K, "q3_K", quantize_q3_K),
    decoded<decode_q4_K, 144>(Type::Q4_K, "q4_K", quantize_q4_K),
    decoded<decode_q5_K, 176>(Type::Q5_K, "q5_K", quantize_q5_K),
    decoded<decode_q6_K, 210>(Type::Q6_K, "q6_K", quantize_q6_K),
    decoded<decode_iq2_xxs, 66>(Type::IQ2_XXS, "iq2_xxs", nullptr),
    decoded<decode_iq2_xs, 74>(Type::IQ2_XS, "iq2_xs", nullptr),
    decoded<decode_iq2_s, 82>(Type::IQ2_S, "iq2_s", nullptr),
    decoded<decode_iq3_xxs, 98>(Type::IQ3_XXS, "iq3_xxs", nullptr),
    decoded<decode_iq3_s, 110>(Type::IQ3_S, "iq3_s", nullptr),
    decoded<decode_iq1_s, 50>(Type::IQ1_S, "iq1_s", nullptr),
    decoded<decode_iq1_m, 56>(Type::IQ1_M, "iq1_m", nullptr),
    decoded32<decode_iq4_nl, 18>(Type::IQ4_NL, "iq4_nl", quantize_iq4_nl),
    decoded<decode_iq4_xs, 136>(Type::IQ4_XS, "iq4_xs", quantize_iq4_xs),
    decoded<decode_tq1_0, 54>(Type::TQ1_0, "tq1_0", quantize_tq1_0),
    decoded<decode_tq2_0, 66>(Type::TQ2_0, "tq2_0", quantize_tq2_0),
    decoded32<decode_mxfp4, 17>(Type::MXFP4, "mxfp4", quantize_mxfp4),
    data(Type::I8, "i8", 1),
    data(Type::I16, "i16", 2),
    data(Type::I32, "i32", 4),
    data(Type::I64, "i64", 8),
    data(Type::F64, "f64", 8),
};

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
