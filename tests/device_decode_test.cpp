// The device kernel source's block decoders, compiled for the host: bit for bit the CPU decoders' integers, scales
// and offsets, for every quantized format, on random blocks and on ggml's golden files; and the program OpenCL
// compiles.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "device/kernels/decode.h"
#include "format/random_blocks.hpp"
#include "format/registry.hpp"
#include "ggufmm/gguf.hpp"
#include "test_support.hpp"

// The device program as embedded for OpenCL (src/CMakeLists.txt generates it).
extern const char* const ggufmm_device_program[];
extern const size_t ggufmm_device_program_parts;

namespace ggufmm {
namespace {

namespace dk = device::kernels;
using PortableDecodeFn = dk::gm_sub (*)(const uint8_t* block, int sub);

struct PortableDecoder {
  std::string_view name;
  PortableDecodeFn decode;
  int shape;  // GM_SHAPE_<name>
};
constexpr PortableDecoder kPortable[] = {
#define GGUFMM_PORTABLE_ENTRY(name) {#name, &dk::gm_decode_##name, GM_SHAPE_##name},
    GM_QUANT_FORMATS(GGUFMM_PORTABLE_ENTRY)
#undef GGUFMM_PORTABLE_ENTRY
};

const PortableDecoder* portable_entry(Type type) {
  for (const PortableDecoder& d : kPortable) {
    if (d.name == type_info(type)->name) return &d;
  }
  return nullptr;
}

PortableDecodeFn portable_decoder(Type type) {
  const PortableDecoder* d = portable_entry(type);
  return d ? d->decode : nullptr;
}

std::vector<Type> quant_types() {
  std::vector<Type> types;
  for (const Type type : test::weight_types()) {
    if (!test::is_float(type)) types.push_back(type);
  }
  return types;
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// Every sub-block of `count` blocks, portable against the CPU's decoder; stops at the first difference.
void expect_same_decoding(Type type, const uint8_t* blocks, int64_t count) {
  const format::Format& cpu = *format::find(type);
  const PortableDecodeFn portable = portable_decoder(type);
  ASSERT_NE(portable, nullptr);
  const int subs = cpu.info.block_size / format::Int8Block::kSubBlock;
  for (int64_t b = 0; b < count; ++b) {
    const uint8_t* block = blocks + b * cpu.info.block_bytes;
    format::Int8Block want;
    cpu.decode(block, want);
    for (int s = 0; s < subs; ++s) {
      const dk::gm_sub got = portable(block, s);
      const std::string where = "block " + std::to_string(b) + ", sub-block " + std::to_string(s);
      ASSERT_EQ(std::memcmp(got.q, want.q + 16 * s, 16), 0) << where;
      ASSERT_EQ(bits(got.scale), bits(want.scale[s])) << where << ": scale " << got.scale << " vs " << want.scale[s];
      ASSERT_EQ(bits(got.offset), bits(want.offset[s])) << where << ": offset " << got.offset << " vs "
                                                        << want.offset[s];
    }
  }
}

TEST(DeviceDecoders, OneForEveryQuantizedFormatInTheLibrarysOrder) {
  std::vector<std::string_view> portable, library;
  for (const PortableDecoder& d : kPortable) portable.push_back(d.name);
  for (const Type type : quant_types()) library.push_back(type_info(type)->name);
  EXPECT_EQ(portable, library);
}

class DeviceDecoder : public ::testing::TestWithParam<Type> {};

TEST_P(DeviceDecoder, MatchesTheCpuDecoderOnRandomBlocks) {
  std::mt19937 rng(static_cast<uint32_t>(GetParam()));
  const int64_t k = 1024, m = 16;
  const std::vector<uint8_t> weight = format::random_weight(GetParam(), m, k, rng);
  expect_same_decoding(GetParam(), weight.data(), m * k / type_info(GetParam())->block_size);
}

// Any bytes at all, NaN and infinite scales included: the integers and the scale's bits must still agree.
TEST_P(DeviceDecoder, MatchesTheCpuDecoderOnArbitraryBytes) {
  std::mt19937 rng(1000 + static_cast<uint32_t>(GetParam()));
  const int64_t count = 64;
  std::vector<uint8_t> bytes(static_cast<size_t>(count * type_info(GetParam())->block_bytes));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  expect_same_decoding(GetParam(), bytes.data(), count);
}

// The shape the products assume of a format (GM_SHAPE) is what its decoder gives: a format said to pair its
// sub-blocks gives sub-blocks 2j and 2j + 1 the same scale and offset in every block, and one said to have no
// offsets gives none; and the other way round, some random block shows a format that is not said to pair or to
// have offsets doing neither, so that no format misses the cheaper product by a row too cautious.
TEST_P(DeviceDecoder, ShapeIsTheDecodersBothWays) {
  const PortableDecoder* entry = portable_entry(GetParam());
  ASSERT_NE(entry, nullptr);
  const TypeInfo& info = *type_info(GetParam());
  std::mt19937 rng(2000 + static_cast<uint32_t>(GetParam()));
  const int64_t k = 4096, m = 16, blocks = m * k / info.block_size;
  const std::vector<uint8_t> weight = format::random_weight(GetParam(), m, k, rng);
  bool pairs = true, offsets = false;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = weight.data() + b * info.block_bytes;
    for (int s = 0; s < info.block_size / 16; s += 2) {
      const dk::gm_sub even = entry->decode(block, s), odd = entry->decode(block, s + 1);
      pairs = pairs && bits(even.scale) == bits(odd.scale) && bits(even.offset) == bits(odd.offset);
      offsets = offsets || even.offset != 0.0f || odd.offset != 0.0f;
    }
  }
  EXPECT_EQ(pairs, (entry->shape & GM_PAIRS) != 0);
  EXPECT_EQ(offsets, (entry->shape & GM_OFFSETS) != 0);
}

// scale * q - offset from the portable decoders is ggml's dequantization, bit for bit.
TEST_P(DeviceDecoder, DequantizesTheGoldenFileAsGgml) {
  const std::string name(type_info(GetParam())->name);
  GGUFMM_OPEN_GOLDEN(file, name + ".gguf");
  const Weight w = file.weight("weight");
  const std::vector<float> want = file.read_f32("dequant");
  const PortableDecodeFn portable = portable_decoder(GetParam());
  ASSERT_NE(portable, nullptr);
  const auto* blocks = static_cast<const uint8_t*>(w.data);
  const TypeInfo& info = *type_info(GetParam());
  size_t mismatches = 0;
  for (size_t i = 0; i < want.size(); i += 16) {
    const size_t block = i / static_cast<size_t>(info.block_size);
    const int sub = static_cast<int>(i % static_cast<size_t>(info.block_size)) / 16;
    const dk::gm_sub s = portable(blocks + block * static_cast<size_t>(info.block_bytes), sub);
    for (int j = 0; j < 16; ++j) {
      const float got = s.scale * static_cast<float>(s.q[j]) - s.offset;
      mismatches += bits(got) != bits(want[i + static_cast<size_t>(j)]);
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

// The float formats' loads, value for value the CPU's conversion, NaN payloads and subnormals included.
TEST(DeviceDecoders, FloatValuesAreTheCpusBitForBit) {
  using LoadFn = float (*)(const uint8_t* row, int64_t j);
  struct FloatLoad {
    std::string_view name;
    LoadFn load;
  };
  constexpr FloatLoad kLoads[] = {
#define GGUFMM_FLOAT_ENTRY(name) {#name, &dk::gm_value_##name},
      GM_FLOAT_FORMATS(GGUFMM_FLOAT_ENTRY)
#undef GGUFMM_FLOAT_ENTRY
  };
  std::vector<std::string_view> names;
  for (const FloatLoad& f : kLoads) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string_view>{"f32", "f16", "bf16"}));
  std::mt19937 rng(7);
  std::vector<uint8_t> bytes(4 * 4096);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  for (const FloatLoad& f : kLoads) {
    const format::Format& cpu = *format::find(f.name);
    const int64_t n = static_cast<int64_t>(bytes.size()) / cpu.info.block_bytes;
    std::vector<float> want(static_cast<size_t>(n));
    cpu.dequantize(bytes.data(), want.data(), n);
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(bits(f.load(bytes.data(), j)), bits(want[static_cast<size_t>(j)])) << f.name << " value " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, DeviceDecoder, ::testing::ValuesIn(quant_types()), test::type_test_name);

// The program the library embeds for OpenCL is OpenCL C alone: the portable subset's CUDA and host mappings, and what
// they include, stay out of it.
TEST(DeviceProgram, TheEmbeddedOpenCLProgramHoldsOnlyOpenCLCode) {
  std::string program;
  for (size_t i = 0; i < ggufmm_device_program_parts; ++i) program += ggufmm_device_program[i];
  EXPECT_NE(program.find("__kernel"), std::string::npos);
  for (const char* foreign : {"#include", "namespace", "std::", "__device__", "__global__", "asm(", "cuda_fp16"}) {
    EXPECT_EQ(program.find(foreign), std::string::npos) << foreign;
  }
}

}  // namespace
}  // namespace ggufmm
