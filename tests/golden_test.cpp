// Every golden file made by ggml: dequantization bit for bit, quantizer quality, and the reference product.
#include <gtest/gtest.h>

#include <cstring>
#include <fmt/format.h>

#include "ggufmm/gguf.hpp"
#include "ggufmm/ggufmm.hpp"
#include "testdata.hpp"

namespace ggufmm {
namespace {

const std::vector<std::string> kGoldenTypes = {"f32",    "f16",    "bf16",    "q4_0",   "q4_1",  "q5_0",  "q5_1",
                                    "q8_0",   "q2_K",   "q3_K",    "q4_K",   "q5_K",  "q6_K",  "iq2_xxs",
                                    "iq2_xs", "iq2_s",  "iq3_xxs", "iq3_s",  "iq1_s", "iq1_m", "iq4_nl",
                                    "iq4_xs", "tq1_0",  "tq2_0",   "mxfp4"};

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

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, DequantizeMatchesGgmlBitForBit) {
  GGUFMM_REQUIRE_GOLDEN(path, GetParam() + ".gguf");
  const auto file = gguf::File::open(path);
  const Weight w = file.weight("weight");
  ASSERT_EQ(type_info(w.type)->name, GetParam());
  const std::vector<float> got = dequantize(w);
  const std::vector<float> want = file.read_f32("dequant");
  ASSERT_EQ(got.size(), want.size());
  size_t mismatches = 0, first = got.size();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && mismatches++ == 0) first = i;
  }
  EXPECT_EQ(mismatches, 0u) << "first at " << first << ": got " << got[first] << " want " << want[first];
}

TEST_P(Golden, QuantizerNoWorseThanGgml) {
  GGUFMM_REQUIRE_GOLDEN(path, GetParam() + ".gguf");
  const auto file = gguf::File::open(path);
  const Weight golden = file.weight("weight");
  if (!type_info(golden.type)->can_quantize) GTEST_SKIP() << GetParam() << " needs an importance-matrix search";
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
  GGUFMM_REQUIRE_GOLDEN(path, GetParam() + ".gguf");
  const auto file = gguf::File::open(path);
  const Weight w = file.weight("weight");
  for (const int n : {1, 3, 8, 37}) {
    const std::vector<float> x = file.read_f32(fmt::format("act.{}", n));
    const std::vector<float> exact = file.read_f32(fmt::format("exact_out.{}", n));
    ASSERT_EQ(exact.size(), static_cast<size_t>(n * w.m));
    std::vector<float> y(exact.size());
    matmul(w, x.data(), n, y.data(), nullptr, {.path = Path::Ref});
    EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 1e-10) << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, Golden, ::testing::ValuesIn(kGoldenTypes),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace ggufmm
