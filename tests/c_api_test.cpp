// The C API: status codes, the last error, and the same results as the C++ API.
#include "ggufmm/ggufmm.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ggufmm/gguf.hpp"
#include "ggufmm/ggufmm.hpp"
#include "test_support.hpp"

namespace {

TEST(CApi, MatmulOnAGoldenFileMatchesExact) {
  GGUFMM_GOLDEN_PATH(path, "q8_0.gguf");
  ggufmm_file* file = nullptr;
  ASSERT_EQ(ggufmm_file_open(path.c_str(), &file), GGUFMM_OK) << ggufmm_last_error();
  ggufmm_weight w;
  ASSERT_EQ(ggufmm_file_weight(file, "weight", &w), GGUFMM_OK);
  EXPECT_STREQ(ggufmm_type_name(w.type), "q8_0");
  EXPECT_EQ(w.k, 768);
  EXPECT_EQ(w.m, 48);

  const auto [x, ggml, exact] = ggufmm::test::read_golden_product(ggufmm::gguf::File::open(path), 8);
  std::vector<float> y(exact.size());
  const ggufmm_options options = {GGUFMM_PATH_REF, 1};
  ASSERT_EQ(ggufmm_matmul(&w, x.data(), 8, y.data(), nullptr, &options), GGUFMM_OK);
  EXPECT_LE(ggufmm::nmse(y.data(), exact.data(), y.size()), 1e-10);

  EXPECT_EQ(ggufmm_file_weight(file, "no_such", &w), GGUFMM_BAD_INPUT);
  EXPECT_NE(std::string(ggufmm_last_error()).find("no_such"), std::string::npos) << ggufmm_last_error();
  ggufmm_file_close(file);
}

TEST(CApi, ErrorsBecomeStatusCodes) {
  ggufmm_file* file = nullptr;
  EXPECT_EQ(ggufmm_file_open("/nonexistent/model.gguf", &file), GGUFMM_BAD_INPUT);
  EXPECT_NE(std::string(ggufmm_last_error()).find("/nonexistent/model.gguf"), std::string::npos);
  EXPECT_EQ(file, nullptr);
  EXPECT_EQ(ggufmm_file_open(nullptr, &file), GGUFMM_BAD_USAGE);

  std::vector<float> x(64), y(2);
  std::vector<uint8_t> blocks(2 * 2 * 34);
  const ggufmm_weight w = {8 /* q8_0 */, 64, 2, 1, blocks.data()};
  EXPECT_EQ(ggufmm_matmul(&w, x.data(), 1, y.data(), nullptr, nullptr), GGUFMM_OK);
  const ggufmm_weight bad = {8, 48, 2, 1, blocks.data()};
  EXPECT_EQ(ggufmm_matmul(&bad, x.data(), 1, y.data(), nullptr, nullptr), GGUFMM_BAD_INPUT);
  EXPECT_NE(std::string(ggufmm_last_error()).find("not a multiple"), std::string::npos);
  const int32_t ids[] = {3};
  const ggufmm_weight two = {8, 64, 1, 2, blocks.data()};
  EXPECT_EQ(ggufmm_mul_mat_id(&two, x.data(), 1, 1, ids, 1, y.data(), nullptr, nullptr), GGUFMM_BAD_INPUT);
  EXPECT_EQ(ggufmm_matmul(nullptr, x.data(), 1, y.data(), nullptr, nullptr), GGUFMM_BAD_USAGE);
  EXPECT_EQ(ggufmm_type_name(99), nullptr);
}

}  // namespace
