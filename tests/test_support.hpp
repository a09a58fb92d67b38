// What the tests share: the golden files (where they are, which there are, reading them, and whether a missing one
// skips or fails its test), random inputs, the weight formats to run over, exact references, bit-for-bit
// comparisons, and the messages of errors.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "format/random_blocks.hpp"
#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"

namespace ggufmm::test {

// ---- The golden files ggml made (tests/data/golden/README.md says what each holds) --------------------------------

// $GGUFMM_TESTDATA, else tests/data/golden in the source tree (GGUFMM_GOLDEN_DIR: an absolute path compiled in, so
// that any working directory finds it).
std::filesystem::path testdata_dir();

// Whether a missing golden file fails its test rather than skipping it: GGUFMM_REQUIRE_GOLDEN set to anything but
// "" or "0" (CI sets it to 1).
bool golden_required();

// The path of a golden file, or "" when it is not there.
std::string golden_path(const std::string& file);

// Why a golden file's test does not run.
std::string golden_missing(const std::string& file);

// The formats with a golden file of their own, <type>.gguf: every weight format.
extern const std::vector<std::string> kGoldenTypes;
// The formats of the mixture-of-experts golden files, and those files (without ".gguf"): moe-<type>-shared, where
// all of a token's experts take one activation row, and moe-<type>-perslot, one row per slot.
extern const std::vector<std::string> kMoeGoldenTypes;
extern const std::vector<std::string> kMoeGoldenFiles;

// The activation row counts n of a dense golden file's act.<n>, ggml_out.<n> and exact_out.<n>.
inline constexpr int kGoldenRows[] = {1, 3, 8, 37};

// One product of a dense golden file: the activations act.<n>, ggml's product ggml_out.<n> and the exact one,
// exact_out.<n>.
struct GoldenProduct {
  std::vector<float> act, ggml, exact;
};
GoldenProduct read_golden_product(const gguf::File& file, int n);

// A mixture-of-experts golden file's call: the experts (viewing the file's mapping), the expert ids of each
// token's slots, the activations (act_slots rows a token: 1 shared, or one per slot) and the exact product.
struct MoeGoldenCall {
  Weight w;
  int64_t slots, tokens, act_slots;
  std::vector<int32_t> ids;
  std::vector<float> act, exact;
};
MoeGoldenCall read_moe_golden(const gguf::File& file);

// ---- Random inputs --------------------------------------------------------------------------------------------

// n standard normal values.
std::vector<float> random_values(size_t n, std::mt19937& rng);

// m rows of k values of any weight type, finite and of sane size: the library's generator.
using format::random_weight;

// A random weight (random_weight's bytes, `experts` matrices of m rows) with the Weight that views them.
struct RandomWeight {
  std::vector<uint8_t> bytes;
  Weight w;
  RandomWeight(Type type, int64_t m, int64_t k, std::mt19937& rng, int64_t experts = 1);
  RandomWeight(RandomWeight&&) = default;  // the bytes move with their buffer: w stays valid
  RandomWeight(const RandomWeight&) = delete;
  RandomWeight& operator=(const RandomWeight&) = delete;
};

// values (rows of k) quantized to `type` and dequantized again.
std::vector<float> round_trip(Type type, const std::vector<float>& values, int64_t k);

// ---- Formats ---------------------------------------------------------------------------------------------------

// Every weight format, in the registry's order.
std::vector<Type> weight_types();
bool is_float(Type type);  // f32, f16, bf16

// Test name suffixes for parameters: a type's name; a string with '-' made '_' (names allow letters, digits, '_').
std::string type_test_name(const ::testing::TestParamInfo<Type>& info);
std::string string_test_name(const ::testing::TestParamInfo<std::string>& info);

// The name of the kernel level this machine runs by default ("avx512", "avx2", ...).
std::string active_isa_name();

// ---- References and comparisons ---------------------------------------------------------------------------------

// The exact product of w and x (rows rows), plus residual where there is one.
std::vector<double> exact_plus(const Weight& w, const float* x, int64_t rows, const float* residual);

// Expert e of a mixture-of-experts weight, as a weight of its own.
Weight expert_weight(const Weight& w, int64_t e);

// Each value times two.
std::vector<float> doubled(const std::vector<float>& values);

// The NMSE of several products together: their summed squared errors over their summed squared references.
class NmseSum {
 public:
  void add(const float* got, const float* reference, size_t n);
  double value() const { return error_ / scale_; }

 private:
  double error_ = 0.0, scale_ = 0.0;
};

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// The values of got whose bits differ from want's (of the same size): how many, and the first.
struct BitMismatches {
  size_t count = 0, first = 0;
};
BitMismatches bit_mismatches(const std::vector<float>& got, const std::vector<float>& want);

// A file's bytes.
std::vector<uint8_t> read_bytes(const std::string& path);

// ---- Errors ----------------------------------------------------------------------------------------------------

// The message of the error `call` throws, which must be of `kind` (a test failure where it is not, or where
// nothing is thrown).
template <class F>
std::string error_of(Error::Kind kind, F&& call) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

template <class F>
std::string input_error(F&& call) {
  return error_of(Error::Kind::BadInput, call);
}

template <class F>
std::string usage_error(F&& call) {
  return error_of(Error::Kind::BadUsage, call);
}

}  // namespace ggufmm::test

// Declares path_var, the path of golden file `file`. Where the file is missing, skips the current test saying
// why, or under GGUFMM_REQUIRE_GOLDEN fails it.
#define GGUFMM_GOLDEN_PATH(path_var, file)                        \
  const std::string path_var = ::ggufmm::test::golden_path(file); \
  if (path_var.empty()) {                                         \
    if (::ggufmm::test::golden_required()) {                      \
      FAIL() << ::ggufmm::test::golden_missing(file);             \
    }                                                             \
    GTEST_SKIP() << ::ggufmm::test::golden_missing(file);         \
  }                                                               \
  static_assert(true)

// Declares file_var, golden file `file` opened (a gguf::File), where GGUFMM_GOLDEN_PATH finds it.
#define GGUFMM_OPEN_GOLDEN(file_var, file)  \
  GGUFMM_GOLDEN_PATH(file_var##_path, file); \
  const ::ggufmm::gguf::File file_var = ::ggufmm::gguf::File::open(file_var##_path)
