// Where the golden GGUF files are: $GGUFMM_TESTDATA, else tests/data/golden in the source tree (an absolute path
// compiled in, GGUFMM_GOLDEN_DIR, so that any working directory finds it). A missing file skips its test, saying
// so; with GGUFMM_REQUIRE_GOLDEN=1 (as CI runs the tests) it fails it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace ggufmm::test {

inline std::filesystem::path testdata_dir() {
  if (const char* env = std::getenv("GGUFMM_TESTDATA"); env && *env) return env;
  return GGUFMM_GOLDEN_DIR;
}

// Whether a missing golden file fails its test: GGUFMM_REQUIRE_GOLDEN set to anything but "" or "0".
inline bool golden_required() {
  const char* env = std::getenv("GGUFMM_REQUIRE_GOLDEN");
  return env && *env && std::string_view(env) != "0";
}

// The path of a golden file, or "" when it is not on this machine.
inline std::string golden_path(const std::string& file) {
  const auto path = testdata_dir() / file;
  return std::filesystem::exists(path) ? path.string() : std::string();
}

// Why a golden file's test does not run.
inline std::string golden_missing(const std::string& file) {
  const std::string path = (testdata_dir() / file).string();
  if (golden_required()) return "golden file " + path + " not found, and GGUFMM_REQUIRE_GOLDEN requires it";
  return "golden file " + path + " not found (set GGUFMM_TESTDATA to the directory holding the golden GGUF files)";
}

// The mixture-of-experts golden files (without ".gguf").
inline const std::vector<std::string> kMoeGoldenFiles = {
    "moe-q4_0-shared",    "moe-q4_0-perslot",    "moe-q8_0-shared",   "moe-q8_0-perslot",
    "moe-q4_K-shared",    "moe-q4_K-perslot",    "moe-q5_K-shared",   "moe-q5_K-perslot",
    "moe-q6_K-shared",    "moe-q6_K-perslot",    "moe-iq2_xs-shared", "moe-iq2_xs-perslot",
    "moe-iq3_xxs-shared", "moe-iq3_xxs-perslot"};

}  // namespace ggufmm::test

// Declares path_var, the path of golden file `file`. Where the file is missing, skips the current test saying
// why, or under GGUFMM_REQUIRE_GOLDEN fails it.
#define GGUFMM_REQUIRE_GOLDEN(path_var, file)                            \
  const std::string path_var = ::ggufmm::test::golden_path(file);        \
  if (path_var.empty()) {                                                \
    if (::ggufmm::test::golden_required()) {                             \
      FAIL() << ::ggufmm::test::golden_missing(file);                    \
    }                                                                    \
    GTEST_SKIP() << ::ggufmm::test::golden_missing(file);                \
  }                                                                      \
  static_assert(true)
