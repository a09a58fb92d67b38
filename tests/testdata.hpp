// Where the golden GGUF files are: $GGUFMM_TESTDATA, else ../shared/testdata beside the source tree.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace ggufmm::test {

inline std::filesystem::path testdata_dir() {
  if (const char* env = std::getenv("GGUFMM_TESTDATA"); env && *env) return env;
  return std::filesystem::path(GGUFMM_SOURCE_DIR) / ".." / "shared" / "testdata";
}

// The path of a golden file, or "" when it is not on this machine.
inline std::string golden_path(const std::string& file) {
  const auto path = testdata_dir() / file;
  return std::filesystem::exists(path) ? path.string() : std::string();
}

// The mixture-of-experts golden files (without ".gguf").
inline const std::vector<std::string> kMoeGoldenFiles = {
    "moe-q4_0-shared",    "moe-q4_0-perslot",    "moe-q8_0-shared",   "moe-q8_0-perslot",
    "moe-q4_K-shared",    "moe-q4_K-perslot",    "moe-q5_K-shared",   "moe-q5_K-perslot",
    "moe-q6_K-shared",    "moe-q6_K-perslot",    "moe-iq2_xs-shared", "moe-iq2_xs-perslot",
    "moe-iq3_xxs-shared", "moe-iq3_xxs-perslot"};

}  // namespace ggufmm::test

// Skips the current test, saying why, when a golden file is missing.
#define GGUFMM_REQUIRE_GOLDEN(path_var, file)                                                        \
  const std::string path_var = ::ggufmm::test::golden_path(file);                                    \
  if (path_var.empty())                                                                              \
  GTEST_SKIP() << "golden file " << (::ggufmm::test::testdata_dir() / (file)).string()               \
               << " not found (set GGUFMM_TESTDATA to the directory holding the golden GGUF files)"
