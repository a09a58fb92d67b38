// The quantizers of the float, 32-value, K-, ternary and MXFP4 formats: random rows within an error bound per
// format, all-zero and constant rows, values the format represents exactly, tiny and huge values, and blocks at
// 2-byte aligned addresses; and the exact integer decoders against dequantization.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "format/blocks.hpp"
#include "format/fp16.hpp"
#include "format/registry.hpp"
#include "ggufmm/ggufmm.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

// Rows a format reproduces exactly: offset + k * scale for integer k in [lo, hi], each group of 16 holding both
// ends and their neighbours, so that every block and sub-block has one best fit, the same scale. (Q2_K weighs values
// by magnitude: with only two distinct nonzero values a group would also fit exactly at twice the scale.) MXFP4
// takes only k that are doubled E2M1 values.
struct Exact {
  int lo;
  int hi;
  float scale;
  float offset = 0;
};

struct Case {
  Type type;
  double max_nmse;            // on normal random rows; about 1.2 times what the quantizer achieves
  double max_constant_error;  // relative, on a constant row
  Exact exact;
};

const Case kCases[] = {
    {Type::F32, 0, 0, {-1000000, 1000000, 0x1p-7f}},
    {Type::F16, 5.5e-8, 5e-4, {-2048, 2048, 0x1p-5f}},
    {Type::BF16, 3.6e-6, 3e-3, {-256, 256, 0x1p-3f}},
    {Type::Q4_0, 1e-2, 5e-4, {-8, 7, 0.25f}},
    {Type::Q4_1, 7.4e-3, 5e-4, {0, 15, 0.25f, -1.5f}},
    {Type::Q5_0, 2.4e-3, 5e-4, {-16, 15, 0.125f}},
    {Type::Q5_1, 1.9e-3, 5e-4, {0, 31, 0.125f, -2.0f}},
    {Type::Q8_0, 3.8e-5, 1e-3, {-127, 127, 3 * 0x1p-6f}},
    {Type::Q2_K, 0.115, 6e-4, {0, 3, 15 * 0x1p-8f}},
    {Type::Q3_K, 2.9e-2, 7e-4, {-4, 3, 0x1p-4f}},
    {Type::Q4_K, 6.4e-3, 1.7e-2, {0, 15, 63 * 0x1p-10f}},  // constants: 0.001's scale is an fp16 subnormal
    {Type::Q5_K, 1.7e-3, 1.7e-2, {0, 31, 63 * 0x1p-10f}},
    {Type::Q6_K, 4e-4, 2.8e-2, {-32, 31, 0x1p-5f}},
    {Type::TQ1_0, 0.72, 5e-4, {-1, 1, 0.375f}},  // the largest magnitude is the scale: most values round to 0
    {Type::TQ2_0, 0.72, 5e-4, {-1, 1, 0.375f}},
    {Type::MXFP4, 1.7e-2, 0.24, {-12, 12, 0.125f}},  // a power-of-two scale leaves 1.5 to 2 times it unreachable
};

constexpr int64_t kRowLength = 1024;  // a multiple of every block size
constexpr int64_t kRows = 10;

std::vector<float> round_trip(Type type, const std::vector<float>& values) {
  return test::round_trip(type, values, kRowLength);
}

class QuantizeFormat : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizeFormat, RandomRowsWithinBound) {
  // Standard normal values, each row at its own scale: the error must not depend on it.
  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  const float row_scales[] = {0.01f, 0.3f, 1.0f, 7.0f, 100.0f};
  std::vector<float> values(kRows * kRowLength);
  for (size_t i = 0; i < values.size(); ++i) values[i] = normal(rng) * row_scales[i / kRowLength % 5];
  const std::vector<float> got = round_trip(GetParam().type, values);
  ASSERT_EQ(got.size(), values.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(std::isfinite(got[i])) << "value " << i << ": " << got[i];
  for (int64_t r = 0; r < kRows; ++r) {
    const size_t at = static_cast<size_t>(r * kRowLength);
    const double e = nmse(got.data() + at, values.data() + at, kRowLength);
    EXPECT_LE(e, GetParam().max_nmse) << "row " << r;
    RecordProperty("nmse_row_" + std::to_string(r), std::to_string(e));
  }
}

TEST_P(QuantizeFormat, ZeroRowsStayZero) {
  const std::vector<float> zeros(2 * kRowLength, 0.0f);
  for (const float v : round_trip(GetParam().type, zeros)) ASSERT_EQ(v, 0.0f);
}

TEST_P(QuantizeFormat, ConstantRowsStayClose) {
  for (const float c : {1.0f, -3.5f, 0.001f, 250.0f, -0.07f}) {
    const std::vector<float> row(kRowLength, c);
    double worst = 0;
    for (const float v : round_trip(GetParam().type, row)) worst = std::max(worst, std::fabs(static_cast<double>(v - c) / c));
    EXPECT_LE(worst, GetParam().max_constant_error) << "constant " << c;
  }
}

TEST_P(QuantizeFormat, RepresentableValuesRoundTripExactly) {
  const Exact& ex = GetParam().exact;
  const auto allowed = [&](int k) {
    if (GetParam().type != Type::MXFP4) return true;
    const int a = std::abs(k);
    return a <= 4 || a == 6 || a == 8 || a == 12;
  };
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> pick(ex.lo, ex.hi);
  std::vector<float> values(4 * kRowLength);
  for (size_t i = 0; i < values.size(); ++i) {
    const int ends[] = {ex.lo, ex.hi, ex.lo + 1, ex.hi - 1};
    int k = i % 16 < 4 ? ends[i % 16] : pick(rng);
    while (!allowed(k)) k = pick(rng);
    values[i] = ex.offset + static_cast<float>(k) * ex.scale;
  }
  const std::vector<float> got = round_trip(GetParam().type, values);
  size_t mismatches = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != values[i] && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0u) << "first at " << first << ": got " << got[first] << ", want " << values[first];
}

TEST_P(QuantizeFormat, ExtremeValuesGiveNoNaN) {
  // Block formats saturate their half-precision scales, so their values stay finite; F16 and BF16 may round to
  // infinity, as the conversion defines, but never to NaN.
  const bool block_format = type_info(GetParam().type)->block_size > 1;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const std::vector<float (*)(int64_t)> patterns = {
      [](int64_t i) { return i % 2 ? FLT_MAX : -FLT_MAX; },
      [](int64_t i) { return i == 7 ? FLT_MAX : 0.0f; },
      [](int64_t) { return -FLT_MAX; },
      [](int64_t i) { return i % 2 ? 1e-40f : -1e-40f; },
      [](int64_t i) { return i == 3 ? 1e-45f : 0.0f; },
      [](int64_t i) { return i % 2 ? 1e30f : -1e-30f; },
      [](int64_t i) { return i % 3 ? 1e-38f : 3e38f; },
      [](int64_t i) { return static_cast<float>(i % 17) * 1e6f - 5e6f; },
      [](int64_t i) { return static_cast<float>(i % 13) * 1e-9f; },
  };
  for (size_t p = 0; p < patterns.size(); ++p) {
    std::vector<float> row(kRowLength);
    for (int64_t i = 0; i < kRowLength; ++i) row[static_cast<size_t>(i)] = patterns[p](i);
    const std::vector<float> got = round_trip(GetParam().type, row);
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_FALSE(std::isnan(got[i])) << "pattern " << p << ", value " << i;
      if (block_format) {
        ASSERT_TRUE(std::isfinite(got[i])) << "pattern " << p << ", value " << i << ": " << got[i];
      }
    }
  }
  // Random values spanning the whole exponent range.
  std::vector<float> row(kRowLength);
  for (float& v : row) v = unit(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 250) - 125);
  for (const float v : round_trip(GetParam().type, row)) {
    ASSERT_FALSE(std::isnan(v));
    if (block_format) {
      ASSERT_TRUE(std::isfinite(v)) << v;
    }
  }
}

TEST_P(QuantizeFormat, BlocksAtTwoByteAlignedAddressesQuantizeAndDecodeAsAligned) {
  // Rows of a mapped file start wherever the previous row ended; a 34-byte Q8_0 block is only 2-byte aligned.
  const format::Format& f = *format::find(GetParam().type);
  std::mt19937 rng(9);
  std::normal_distribution<float> normal;
  std::vector<float> row(kRowLength);
  for (float& v : row) v = normal(rng);
  const size_t bytes = static_cast<size_t>(kRowLength / f.info.block_size * f.info.block_bytes);
  std::vector<uint16_t> aligned_storage(bytes / 2 + 8), shifted_storage(bytes / 2 + 8);
  auto* aligned = reinterpret_cast<uint8_t*>(aligned_storage.data()) + 8;
  auto* shifted = reinterpret_cast<uint8_t*>(shifted_storage.data()) + 2;
  f.quantize(row.data(), aligned, kRowLength);
  f.quantize(row.data(), shifted, kRowLength);
  ASSERT_EQ(std::memcmp(aligned, shifted, bytes), 0);
  std::vector<float> want(kRowLength), got(kRowLength);
  f.dequantize(aligned, want.data(), kRowLength);
  f.dequantize(shifted, got.data(), kRowLength);
  EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
}

// The exact integer form of each block (format::Int8Block): scale * q - offset must be dequantize() bit for bit,
// and q must stay within the range its format documents (the kernels' integer arithmetic relies on it). Random
// bytes reach every code and every scale, infinities and NaNs included: equal bits hold for those too.
struct CodeRange {
  Type type;
  int lo;
  int hi;
};
const CodeRange kCodeRanges[] = {
    {Type::Q4_0, -8, 7},    {Type::Q4_1, 0, 15},   {Type::Q5_0, -16, 15},   {Type::Q5_1, 0, 31},
    {Type::Q8_0, -128, 127}, {Type::Q2_K, 0, 45},   {Type::Q3_K, -4, 3},     {Type::Q4_K, 0, 15},
    {Type::Q5_K, 0, 31},    {Type::Q6_K, -32, 31}, {Type::TQ1_0, -1, 1},    {Type::TQ2_0, -1, 2},
    {Type::MXFP4, -12, 12},
};

TEST(DecodedFormat, IntegerFormReproducesDequantizeBitForBit) {
  constexpr int kBlocks = 257;
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  int decoded = 0;
  for (const format::Format& f : format::all()) {
    if (!f.decode) continue;
    ++decoded;
    const auto& t = f.info;
    const auto* range = std::ranges::find(kCodeRanges, t.type, &CodeRange::type);
    std::vector<uint8_t> bytes(static_cast<size_t>(kBlocks * t.block_bytes));
    for (auto& b : bytes) b = static_cast<uint8_t>(byte(rng));
    std::vector<float> want(static_cast<size_t>(kBlocks * t.block_size));
    f.dequantize(bytes.data(), want.data(), static_cast<int64_t>(want.size()));
    format::Int8Block b;
    int lo = 127, hi = -128;
    for (int j = 0; j < kBlocks; ++j) {
      f.decode(bytes.data() + j * t.block_bytes, b);
      for (int i = 0; i < t.block_size; ++i) {
        const int s = i / format::Int8Block::kSubBlock;
        const float got = b.scale[s] * static_cast<float>(b.q[i]) - b.offset[s];
        const float expected = want[static_cast<size_t>(j * t.block_size + i)];
        ASSERT_EQ(std::memcmp(&got, &expected, sizeof got), 0)
            << t.name << " block " << j << " value " << i << ": " << got << " vs " << expected;
        lo = std::min<int>(lo, b.q[i]);
        hi = std::max<int>(hi, b.q[i]);
      }
    }
    if (range != std::end(kCodeRanges)) {
      EXPECT_GE(lo, range->lo) << t.name;
      EXPECT_LE(hi, range->hi) << t.name;
    }
  }
  EXPECT_GE(decoded, static_cast<int>(std::size(kCodeRanges)));
}

// Q2_K's integer form folds each 4-bit sub-scale into the levels (scale d, q = sc * level): still ggml's value
// (d * sc) * level - dmin * m, written here as ggml's dequantization loop has it, bit for bit on random bytes.
TEST(DecodedFormat, FoldedQ2KIsGgmlsValue) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int> byte(0, 255);
  format::BlockQ2_K block;
  format::Int8Block b;
  for (int trial = 0; trial < 1000; ++trial) {
    auto* raw = reinterpret_cast<uint8_t*>(&block);
    for (size_t i = 0; i < sizeof block; ++i) raw[i] = static_cast<uint8_t>(byte(rng));
    format::find(Type::Q2_K)->decode(&block, b);
    const float d = format::fp16_to_f32(block.d), dmin = format::fp16_to_f32(block.dmin);
    for (int i = 0; i < format::kQK_K; ++i) {
      // Value i: byte i % 32 of its 128-value half, bits 2 * (i % 128 / 32); sub-block i / 16.
      const int level = (block.qs[i / 128 * 32 + i % 32] >> (2 * (i % 128 / 32))) & 3;
      const uint8_t sc = block.scales[i / 16];
      const float scale = d * static_cast<float>(sc & 0xf), min = dmin * static_cast<float>(sc >> 4);
      const float want = scale * static_cast<float>(level) - min;
      const float got = b.scale[i / 16] * static_cast<float>(b.q[i]) - b.offset[i / 16];
      ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
          << "trial " << trial << " value " << i << ": " << got << " vs " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Quantize, QuantizeFormat, ::testing::ValuesIn(kCases),
                         [](const auto& p) { return std::string(type_info(p.param.type)->name); });

}  // namespace
}  // namespace ggufmm
