#include "test_support.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <string_view>

#include "runtime/cpu.hpp"

namespace ggufmm::test {

std::filesystem::path testdata_dir() {
  if (const char* env = std::getenv("GGUFMM_TESTDATA"); env && *env) return env;
  return GGUFMM_GOLDEN_DIR;
}

bool golden_required() {
  const char* env = std::getenv("GGUFMM_REQUIRE_GOLDEN");
  return env && *env && std::string_view(env) != "0";
}

std::string golden_path(const std::string& file) {
  const auto path = testdata_dir() / file;
  return std::filesystem::exists(path) ? path.string() : std::string();
}

std::string golden_missing(const std::string& file) {
  const std::string path = (testdata_dir() / file).string();
  if (golden_required()) return "golden file " + path + " not found, and GGUFMM_REQUIRE_GOLDEN requires it";
  return "golden file " + path + " not found (set GGUFMM_TESTDATA to the directory holding the golden GGUF files)";
}

const std::vector<std::string> kGoldenTypes = {"f32",    "f16",   "bf16",    "q4_0",  "q4_1",  "q5_0",  "q5_1",
                                               "q8_0",   "q2_K",  "q3_K",    "q4_K",  "q5_K",  "q6_K",  "iq2_xxs",
                                               "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m", "iq4_nl",
                                               "iq4_xs", "tq1_0", "tq2_0",   "mxfp4"};

const std::vector<std::string> kMoeGoldenTypes = {"q4_0", "q8_0", "q4_K", "q5_K", "q6_K", "iq2_xs", "iq3_xxs"};

const std::vector<std::string> kMoeGoldenFiles = [] {
  std::vector<std::string> files;
  for (const std::string& type : kMoeGoldenTypes) {
    for (const char* routing : {"shared", "perslot"}) files.push_back(fmt::format("moe-{}-{}", type, routing));
  }
  return files;
}();

GoldenProduct read_golden_product(const gguf::File& file, int n) {
  return {file.read_f32(fmt::format("act.{}", n)), file.read_f32(fmt::format("ggml_out.{}", n)),
          file.read_f32(fmt::format("exact_out.{}", n))};
}

MoeGoldenCall read_moe_golden(const gguf::File& file) {
  const gguf::TensorInfo& ids = file.tensor("ids");
  MoeGoldenCall call{.w = file.weight("weight"),
                     .slots = ids.shape[0],
                     .tokens = ids.shape[1],
                     .act_slots = file.tensor("act").shape[1],
                     .ids = {},
                     .act = file.read_f32("act"),
                     .exact = file.read_f32("exact_out")};
  call.ids.resize(static_cast<size_t>(call.slots * call.tokens));
  std::memcpy(call.ids.data(), ids.data, call.ids.size() * sizeof(int32_t));
  return call;
}

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

RandomWeight::RandomWeight(Type type, int64_t m, int64_t k, std::mt19937& rng, int64_t experts)
    : bytes(random_weight(type, experts * m, k, rng)),
      w{.type = type, .k = k, .m = m, .experts = experts, .data = bytes.data()} {}

std::vector<float> round_trip(Type type, const std::vector<float>& values, int64_t k) {
  const int64_t rows = static_cast<int64_t>(values.size()) / k;
  const std::vector<uint8_t> bytes = quantize(type, values.data(), rows, k);
  return dequantize(Weight{.type = type, .k = k, .m = rows, .data = bytes.data()});
}

std::vector<Type> weight_types() {
  std::vector<Type> out;
  for (const TypeInfo& t : all_types()) {
    if (t.is_weight) out.push_back(t.type);
  }
  return out;
}

bool is_float(Type type) { return type == Type::F32 || type == Type::F16 || type == Type::BF16; }

std::string type_test_name(const ::testing::TestParamInfo<Type>& info) {
  return std::string(type_info(info.param)->name);
}

std::string string_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  std::ranges::replace(name, '-', '_');
  return name;
}

std::string active_isa_name() { return std::string(runtime::isa_name(runtime::active_isa())); }

std::vector<double> exact_plus(const Weight& w, const float* x, int64_t rows, const float* residual) {
  std::vector<double> exact = exact_matmul(w, x, rows);
  if (residual) {
    for (size_t i = 0; i < exact.size(); ++i) exact[i] += residual[i];
  }
  return exact;
}

Weight expert_weight(const Weight& w, int64_t e) {
  Weight expert = w;
  expert.experts = 1;
  expert.data = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(e) * w.expert_bytes();
  return expert;
}

std::vector<float> doubled(const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = 2.0f * values[i];
  return out;
}

void NmseSum::add(const float* got, const float* reference, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    error_ += (static_cast<double>(got[i]) - reference[i]) * (static_cast<double>(got[i]) - reference[i]);
    scale_ += static_cast<double>(reference[i]) * reference[i];
  }
}

BitMismatches bit_mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  BitMismatches m;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && m.count++ == 0) m.first = i;
  }
  return m;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace ggufmm::test
