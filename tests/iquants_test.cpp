// The IQ formats: ggml's expert weights, the IQ4 quantizers on random and degenerate data, the exact int8
// decoders, the codebook tables, and blocks at 2-byte aligned addresses.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "format/blocks.hpp"
#include "format/fp16.hpp"
#include "format/iq_tables.hpp"
#include "format/registry.hpp"
#include "ggufmm/gguf.hpp"
#include "ggufmm/ggufmm.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

const Type kIQTypes[] = {Type::IQ2_XXS, Type::IQ2_XS, Type::IQ2_S,  Type::IQ3_XXS, Type::IQ3_S,
                         Type::IQ1_S,   Type::IQ1_M,  Type::IQ4_NL, Type::IQ4_XS};

std::vector<float> dequantize_bytes(Type type, const uint8_t* bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  format::find(type)->dequantize(bytes, out.data(), n);
  return out;
}

using test::round_trip;

// ---- ggml's 3-D expert weights

class IQuantsMoe : public ::testing::TestWithParam<std::string> {};

TEST_P(IQuantsMoe, ExpertWeightsMatchGgmlBitForBit) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const Weight w = file.weight("weight");
  ASSERT_EQ(file.tensor("weight").shape, (std::vector<int64_t>{256, 48, 8}));
  ASSERT_TRUE(GetParam().find(type_info(w.type)->name) != std::string::npos) << type_info(w.type)->name;
  const std::vector<float> got = dequantize(w);
  const std::vector<float> want = file.read_f32("dequant");
  ASSERT_EQ(got.size(), want.size());
  const auto [mismatches, first] = test::bit_mismatches(got, want);
  EXPECT_EQ(mismatches, 0u) << "first at expert " << first / (256 * 48) << ", row " << first / 256 % 48 << ", column "
                            << first % 256 << ": got " << got[first] << " want " << want[first];
}

// The IQ formats' mixture-of-experts golden files.
std::vector<std::string> iq_moe_golden_files() {
  std::vector<std::string> files;
  for (const std::string& name : test::kMoeGoldenFiles) {
    if (name.starts_with("moe-iq")) files.push_back(name);
  }
  return files;
}

INSTANTIATE_TEST_SUITE_P(IQuants, IQuantsMoe, ::testing::ValuesIn(iq_moe_golden_files()), test::string_test_name);

// ---- IQ4 quantizers

// Normal values from the raw engine (Box-Muller): std::normal_distribution differs between standard libraries,
// and these data must be the same everywhere for the tight bounds below.
std::vector<float> normal_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto uniform = [&] { return (static_cast<double>(rng()) + 0.5) / 4294967296.0; };  // in (0, 1)
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i += 2) {
    const double radius = std::sqrt(-2 * std::log(uniform())), angle = 2 * std::numbers::pi * uniform();
    v[i] = static_cast<float>(radius * std::cos(angle));
    if (i + 1 < n) v[i + 1] = static_cast<float>(radius * std::sin(angle));
  }
  return v;
}

struct RoundTripCase {
  Type type;
  // Bounds about 1% above the measured NMSE (5.80e-3 for IQ4_NL, 5.90e-3 for IQ4_XS): without the search over
  // trial scales both measure 3% worse, with only the first trial scale 29% worse.
  double max_nmse;
};

class IQuantsRoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(IQuantsRoundTrip, GaussianRowsWithinBound) {
  // Rows of normal values with scales from 1/4 to 32, as weight rows differ (all where fp16 scales are normal
  // numbers: much smaller values lose precision to the format, not to the quantizer).
  const int64_t k = 1024, rows = 64;
  std::vector<float> values = normal_values(static_cast<size_t>(k * rows), 7);
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = std::ldexp(1.0f, static_cast<int>(r % 8) - 2);
    for (int64_t j = 0; j < k; ++j) values[static_cast<size_t>(r * k + j)] *= scale;
  }
  const std::vector<float> back = round_trip(GetParam().type, values, k);
  for (int64_t r = 0; r < rows; ++r) {
    const auto at = static_cast<size_t>(r * k);
    EXPECT_LE(nmse(back.data() + at, values.data() + at, static_cast<size_t>(k)), 7.5e-3) << "row " << r;
  }
  EXPECT_LE(nmse(back.data(), values.data(), values.size()), GetParam().max_nmse);
}

INSTANTIATE_TEST_SUITE_P(IQuants, IQuantsRoundTrip,
                         ::testing::Values(RoundTripCase{Type::IQ4_NL, 5.85e-3}, RoundTripCase{Type::IQ4_XS, 5.95e-3}),
                         [](const auto& param_info) { return std::string(type_info(param_info.param.type)->name); });

class IQuantsQuantize : public ::testing::TestWithParam<Type> {};

TEST_P(IQuantsQuantize, ZerosStayZero) {
  const std::vector<float> zeros(512, 0.0f);
  for (const float v : round_trip(GetParam(), zeros, 256)) ASSERT_EQ(v, 0.0f);
}

TEST_P(IQuantsQuantize, ConstantBlocksAreExactUpToTheHalfScale) {
  // A constant maps to one level exactly; only the fp16 scale rounds (relative error 2^-11, and a little).
  for (const float c : {1.0f, -1.0f, 0.37f, -1234.5f, 20000.0f}) {
    const std::vector<float> values(256, c);
    for (const float v : round_trip(GetParam(), values, 256)) ASSERT_NEAR(v, c, std::fabs(c) * 0x1p-10f) << c;
  }
}

TEST_P(IQuantsQuantize, ZeroGroupInsideNonZeroBlockStaysZero) {
  std::vector<float> values(256);
  for (size_t j = 0; j < values.size(); ++j) values[j] = j / 32 == 5 ? 0.0f : std::sin(0.1f * static_cast<float>(j));
  const std::vector<float> back = round_trip(GetParam(), values, 256);
  for (size_t j = 5 * 32; j < 6 * 32; ++j) EXPECT_EQ(back[j], 0.0f) << j;
  EXPECT_LE(nmse(back.data(), values.data(), values.size()), 1e-2);
}

TEST_P(IQuantsQuantize, HugeValuesSaturateTheScale) {
  // Scales beyond the largest half would be stored as infinity; they saturate, so the values stay finite.
  for (const float c : {1e30f, -3e38f}) {
    const std::vector<float> values(256, c);
    for (const float v : round_trip(GetParam(), values, 256)) {
      ASSERT_TRUE(std::isfinite(v)) << c;
      ASSERT_EQ(std::signbit(v), std::signbit(c)) << c;
    }
  }
}

TEST_P(IQuantsQuantize, NonFiniteInputsAreSafe) {
  // Nothing to get right here but the absence of undefined behaviour (the sanitizer build checks that).
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> values(256, 1.0f);
  values[3] = std::numeric_limits<float>::quiet_NaN();
  values[40] = inf;
  values[41] = -inf;
  values[100] = 1e38f;
  values[200] = 1e-40f;
  EXPECT_EQ(round_trip(GetParam(), values, 256).size(), values.size());
}

INSTANTIATE_TEST_SUITE_P(IQuants, IQuantsQuantize, ::testing::Values(Type::IQ4_NL, Type::IQ4_XS), test::type_test_name);

TEST(IQuantsIQ4XS, UsesSixBitGroupScales) {
  // Groups holding one pattern at amplitudes 8 and 1 get group scales -32 and -4 (stored + 32), the largest
  // mapped to -32; the pattern is the same in every group so that their best scales differ exactly by 8x.
  std::vector<float> values(256);
  for (size_t j = 0; j < values.size(); ++j) values[j] = (j / 32 % 2 ? 8.0f : 1.0f) * std::cos(0.3f * (j % 32));
  format::BlockIQ4_XS block;
  format::find(Type::IQ4_XS)->quantize(values.data(), &block, 256);
  for (int g = 0; g < 8; ++g) {
    const int stored = ((block.scales_l[g / 2] >> (4 * (g % 2))) & 0xf) | ((block.scales_h >> (2 * g)) & 3) << 4;
    EXPECT_EQ(stored, g % 2 ? 0 : 28) << g;
  }
}

// ---- Dequantization of hand-made and degenerate blocks

TEST(IQuantsDequantize, ZeroBytesGiveZeros) {
  const std::vector<uint8_t> zeros(256, 0);  // at least 256 values' worth in every IQ format
  for (const Type type : kIQTypes) {
    for (const float v : dequantize_bytes(type, zeros.data(), 256)) ASSERT_EQ(v, 0.0f) << type_info(type)->name;
  }
}

TEST(IQuantsDequantize, IQ3SBlockDecodesGridEntriesScalesAndSigns) {
  format::BlockIQ3_S b{};
  b.d = format::f32_to_fp16(0.5f);
  b.scales[0] = 0x21;  // group 0: 2*1+1 = 3, group 1: 2*2+1 = 5
  b.qs[0] = 1;         // group 0, run 0, first half: entry 256 + 1 with the qh bit
  b.qh[0] = 0x01;      // (its second half: entry 0)
  b.signs[0] = 0x81;   // values 0 and 7 negative
  b.qs[8] = 2;         // group 1, run 0, first half: entry 2
  const std::vector<float> y = dequantize_bytes(Type::IQ3_S, reinterpret_cast<const uint8_t*>(&b), 256);
  const auto level = [](uint32_t entry, int j) { return static_cast<float>((entry >> (8 * j)) & 0xff); };
  for (int j = 0; j < 4; ++j) EXPECT_EQ(y[j], 1.5f * level(format::kIQ3SGrid[257], j) * (j == 0 ? -1 : 1)) << j;
  for (int j = 4; j < 8; ++j) EXPECT_EQ(y[j], 1.5f * level(format::kIQ3SGrid[0], j - 4) * (j == 7 ? -1 : 1)) << j;
  for (int j = 0; j < 4; ++j) EXPECT_EQ(y[32 + j], 2.5f * level(format::kIQ3SGrid[2], j)) << j;
}

TEST(IQuantsDequantize, IQ1MScaleAssembledFromFourNibbles) {
  format::BlockIQ1_M b{};
  // d = fp16 0x3c00 (1.0) spread over the top nibbles of the four scale words; group 0's scales 1 and 2.
  const uint16_t d = 0x3c00;
  for (int i = 0; i < 4; ++i) {
    const unsigned word = ((d >> (4 * i)) & 0xfu) << 12 | (i == 0 ? 1u | 2u << 3 : 0u);
    b.scales[2 * i] = static_cast<uint8_t>(word);
    b.scales[2 * i + 1] = static_cast<uint8_t>(word >> 8);
  }
  b.qh[0] = 0x80;  // run 1: delta negative
  const std::vector<float> y = dequantize_bytes(Type::IQ1_M, reinterpret_cast<const uint8_t*>(&b), 256);
  const auto value = [](int j) { return static_cast<float>(static_cast<int8_t>(format::kIQ1SGrid[0] >> (8 * j))); };
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(y[j], 3.0f * (value(j) + format::kIQ1Delta)) << j;       // run 0: scale 2*1+1
    EXPECT_EQ(y[8 + j], 3.0f * (value(j) - format::kIQ1Delta)) << j;   // run 1
    EXPECT_EQ(y[16 + j], 5.0f * (value(j) + format::kIQ1Delta)) << j;  // run 2: scale 2*2+1
  }
}

TEST(IQuantsDequantize, BlocksAtTwoByteAlignedAddressesDecodeAsAligned) {
  // A block inside a mapped file is only 2-byte aligned: decode from an address that is 2 mod 8 and compare.
  std::mt19937 rng(11);
  for (const Type type : kIQTypes) {
    const int32_t block_bytes = type_info(type)->block_bytes, block_size = type_info(type)->block_size;
    const int64_t n = 4 * block_size;
    std::vector<uint8_t> aligned(static_cast<size_t>(4 * block_bytes));
    for (auto& byte : aligned) byte = static_cast<uint8_t>(rng());
    std::vector<uint64_t> storage(aligned.size() / 8 + 2);
    uint8_t* odd = reinterpret_cast<uint8_t*>(storage.data()) + 2;
    std::memcpy(odd, aligned.data(), aligned.size());
    const std::vector<float> want = dequantize_bytes(type, aligned.data(), n);
    const std::vector<float> got = dequantize_bytes(type, odd, n);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << type_info(type)->name;
  }
}

// ---- Exact int8 decoders

// The integers each format's decoder may produce (the documented value sets).
std::set<int> decoded_levels(Type type) {
  const auto signed_magnitudes = [](std::initializer_list<int> magnitudes) {
    std::set<int> levels;
    for (const int m : magnitudes) levels.insert({m, -m});
    return levels;
  };
  switch (type) {
    case Type::IQ2_XXS:
    case Type::IQ2_XS:
    case Type::IQ2_S: return signed_magnitudes({8, 25, 43});
    case Type::IQ3_XXS: return signed_magnitudes({4, 12, 20, 28, 36, 44, 52, 62});
    case Type::IQ3_S: return signed_magnitudes({1, 3, 5, 7, 9, 11, 13, 15});
    case Type::IQ1_S:
    case Type::IQ1_M: return signed_magnitudes({1, 7, 9});  // 8 * {-1, 0, 1} +- 1: the grid in units of the delta
    default: return {std::begin(format::kIQ4Values), std::end(format::kIQ4Values)};
  }
}

TEST(IQuantsDecode, IntegerFormReproducesDequantizationWithinDocumentedLevels) {
  std::mt19937 rng(23);
  for (const Type type : kIQTypes) {
    const format::Format& f = *format::find(type);
    ASSERT_NE(f.decode, nullptr) << f.info.name;
    const std::set<int> levels = decoded_levels(type);
    std::set<int> seen;
    std::vector<uint8_t> block(static_cast<size_t>(f.info.block_bytes));
    for (int trial = 0; trial < 200; ++trial) {
      for (auto& byte : block) byte = static_cast<uint8_t>(rng());
      const std::vector<float> want = dequantize_bytes(type, block.data(), f.info.block_size);
      format::Int8Block b;
      f.decode(block.data(), b);
      for (int j = 0; j < f.info.block_size; ++j) {
        const int s = j / format::Int8Block::kSubBlock;
        ASSERT_LE(std::abs(int{b.q[j]}), 127);
        ASSERT_TRUE(levels.contains(b.q[j])) << f.info.name << ": " << int{b.q[j]};
        ASSERT_EQ(b.offset[s], 0.0f) << f.info.name;  // all IQ formats are symmetric
        const float got = b.scale[s] * b.q[j] - b.offset[s];
        ASSERT_EQ(std::memcmp(&got, &want[static_cast<size_t>(j)], sizeof got), 0) << f.info.name << " value " << j;
        seen.insert(b.q[j]);
      }
    }
    EXPECT_EQ(seen, levels) << f.info.name << ": random blocks reach every level";
  }
}

// ---- Tables

template <class Word>
std::set<unsigned> bytes_of(const Word* grid, size_t n) {
  std::set<unsigned> bytes;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < sizeof(Word); ++j) bytes.insert(static_cast<unsigned>(grid[i] >> (8 * j)) & 0xffu);
  }
  return bytes;
}

template <class Word, size_t N>
void expect_grid(const Word (&grid)[N], size_t size, const std::set<unsigned>& levels, bool sorted = true) {
  EXPECT_EQ(N, size);
  EXPECT_EQ(bytes_of(grid, N), levels);
  EXPECT_EQ(std::set<Word>(std::begin(grid), std::end(grid)).size(), N) << "entries repeat";
  if (sorted) {
    EXPECT_TRUE(std::is_sorted(std::begin(grid), std::end(grid)));
  }
}

TEST(IQuantsTables, GridsHoldTheirLevels) {
  expect_grid(format::kIQ2XXSGrid, 256, {0x08, 0x19, 0x2b});
  expect_grid(format::kIQ2XSGrid, 512, {0x08, 0x19, 0x2b});
  expect_grid(format::kIQ2SGrid, 1024, {0x08, 0x19, 0x2b});
  expect_grid(format::kIQ3XXSGrid, 256, {4, 12, 20, 28, 36, 44, 52, 62});
  expect_grid(format::kIQ3SGrid, 512, {1, 3, 5, 7, 9, 11, 13, 15});
  expect_grid(format::kIQ1SGrid, 2048, {0x00, 0x01, 0xff}, false);
}

TEST(IQuantsTables, GridsStartAndEndWhereExpected) {
  // Spot checks of the transcription: the first and last entries of each grid.
  EXPECT_EQ(format::kIQ2XXSGrid[0], 0x0808080808080808u);
  EXPECT_EQ(format::kIQ2XXSGrid[255], 0x2b2b2b1908081908u);
  EXPECT_EQ(format::kIQ2XSGrid[0], 0x0808080808080808u);
  EXPECT_EQ(format::kIQ2XSGrid[511], 0x2b2b2b2b2b2b2b2bu);
  EXPECT_EQ(format::kIQ2SGrid[0], 0x0808080808080808u);
  EXPECT_EQ(format::kIQ2SGrid[1023], 0x2b2b2b2b2b2b2b2bu);
  EXPECT_EQ(format::kIQ3XXSGrid[0], 0x04040404u);
  EXPECT_EQ(format::kIQ3XXSGrid[255], 0x3e341c04u);
  EXPECT_EQ(format::kIQ3SGrid[0], 0x01010101u);
  EXPECT_EQ(format::kIQ3SGrid[511], 0x0f0f0101u);
  EXPECT_EQ(format::kIQ1SGrid[0], 0xffffffffffffffffu);
  EXPECT_EQ(format::kIQ1SGrid[2047], 0x0101010101010101u);
}

TEST(IQuantsTables, SignsHaveEvenParity) {
  for (unsigned i = 0; i < format::kIQ2Signs.size(); ++i) {
    EXPECT_EQ(format::kIQ2Signs[i] & 0x7fu, i);
    EXPECT_EQ(std::popcount(static_cast<unsigned>(format::kIQ2Signs[i])) % 2, 0) << i;
  }
  EXPECT_EQ(format::kIQ2Signs[1], 129);
  EXPECT_EQ(format::kIQ2Signs[3], 3);
}

TEST(IQuantsTables, IQ4LevelsAscend) {
  EXPECT_EQ(std::size(format::kIQ4Values), 16u);
  EXPECT_TRUE(std::is_sorted(std::begin(format::kIQ4Values), std::end(format::kIQ4Values)));
  EXPECT_EQ(format::kIQ4Values[0], -127);
  EXPECT_EQ(format::kIQ4Values[15], 113);
}

}  // namespace
}  // namespace ggufmm
