// Every golden file made by ggml: dequantization bit for bit, quantizer quality, and the reference product.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include "ggufmm/gguf.hpp"
#include "ggufmm/ggufmm.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

using test::kGoldenTypes;

// Every golden file the tests read is in the directory. A missing one fails (GGUFMM_REQUIRE_GOLDEN) or skips the
// tests that read it; this one names all that are missing at once.
TEST(GoldenData, EveryFileIsThere) {
  std::string missing;
  for (const std::string& type : kGoldenTypes) {
    if (test::golden_path(type + ".gguf").empty()) missing += " " + type + ".gguf";
  }
  for (const std::string& name : test::kMoeGoldenFiles) {
    if (test::golden_path(name + ".gguf").empty()) missing += " " + name + ".gguf";
  }
  if (missing.empty()) return;
  const std::string message = "missing from " + test::testdata_dir().string() + ":" + missing;
  if (test::golden_required()) FAIL() << message;
  GTEST_SKIP() << message;
}

// The dense golden files cover every weight format, so that no format's golden tests are missing.
TEST(GoldenData, EveryWeightFormatHasAFile) {
  std::vector<std::string> formats, golden = kGoldenTypes;
  for (const Type type : test::weight_types()) formats.emplace_back(type_info(type)->name);
  std::ranges::sort(formats);
  std::ranges::sort(golden);
  EXPECT_EQ(golden, formats);
}

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, DequantizeMatchesGgmlBitForBit) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const Weight w = file.weight("weight");
  ASSERT_EQ(type_info(w.type)->name, GetParam());
  const std::vector<float> got = dequantize(w);
  const std::vector<float> want = file.read_f32("dequant");
  ASSERT_EQ(got.size(), want.size());
  const auto [mismatches, first] = test::bit_mismatches(got, want);
  EXPECT_EQ(mismatches, 0u) << "first at " << first << ": got " << got[first] << " want " << want[first];
}

// The quantizers, on the formats ggufmm quantizes to (GoldenQuantizer below): ours is no worse than ggml's.
class GoldenQuantizer : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenQuantizer, NoWorseThanGgml) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const Weight golden = file.weight("weight");
  ASSERT_TRUE(type_info(golden.type)->can_quantize) << GetParam();
  const std::vector<float> source = file.read_f32("source");
  const std::vector<float> golden_dequant = file.read_f32("dequant");
  const std::vector<uint8_t> ours = quantize(golden.type, source.data(), golden.m, golden.k);
  Weight mine = golden;
  mine.data = ours.data();
  const std::vector<float> our_dequant = dequantize(mine);
  const double ggml_nmse = nmse(golden_dequant.data(), source.data(), source.size());
  const double our_nmse = nmse(our_dequant.data(), source.data(), source.size());
  RecordProperty("ggml_nmse", fmt::format("{:.4e}", ggml_nmse));
  RecordProperty("our_nmse", fmt::format("{:.4e}", our_nmse));
  EXPECT_LE(our_nmse, ggml_nmse * 1.02) << "ggml " << ggml_nmse << ", ours " << our_nmse;
}

TEST_P(Golden, ReferenceProductMatchesExact) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const Weight w = file.weight("weight");
  for (const int n : test::kGoldenRows) {
    const auto [x, ggml, exact] = test::read_golden_product(file, n);
    ASSERT_EQ(exact.size(), static_cast<size_t>(n * w.m));
    std::vector<float> y(exact.size());
    matmul(w, x.data(), n, y.data(), nullptr, {.path = Path::Ref});
    EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 1e-10) << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, Golden, ::testing::ValuesIn(kGoldenTypes), test::string_test_name);

// The golden formats ggufmm quantizes to: all but the IQ2 and IQ3 codebook formats and IQ1, which need an
// importance-matrix search.
std::vector<std::string> quantizable_golden_types() {
  std::vector<std::string> out;
  for (const std::string& name : kGoldenTypes) {
    if (type_info(name)->can_quantize) out.push_back(name);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllFormats, GoldenQuantizer, ::testing::ValuesIn(quantizable_golden_types()),
                         test::string_test_name);

// The golden formats left out there refuse to be quantized to.
TEST(GoldenQuantizer, FormatsWithoutAQuantizerRefuseToQuantize) {
  const std::vector<float> zeros(256);
  for (const std::string& name : kGoldenTypes) {
    if (type_info(name)->can_quantize) continue;
    const std::string message = test::usage_error([&] { quantize(type_info(name)->type, zeros.data(), 1, 256); });
    EXPECT_NE(message.find("cannot quantize to " + name), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace ggufmm
