// The reference path: ggml's mul_mat_id golden files, random shapes with residuals, and argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "ggufmm/gguf.hpp"
#include "ggufmm/ggufmm.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

class MoeGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeGolden, ReferenceMulMatIdMatchesExact) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const test::MoeGoldenCall c = test::read_moe_golden(file);
  ASSERT_EQ(c.w.experts, 8);
  ASSERT_EQ(c.act_slots, GetParam().ends_with("shared") ? 1 : c.slots);
  std::vector<float> y(c.exact.size());
  mul_mat_id(c.w, c.act.data(), c.tokens, c.act_slots, c.ids.data(), c.slots, y.data(), nullptr, {.path = Path::Ref});
  EXPECT_LE(nmse(y.data(), c.exact.data(), y.size()), 1e-10);

  // The dequantized experts match ggml's too.
  EXPECT_TRUE(test::same_bits(dequantize(c.w), file.read_f32("dequant")));
}

INSTANTIATE_TEST_SUITE_P(AllFiles, MoeGolden, ::testing::ValuesIn(test::kMoeGoldenFiles), test::string_test_name);

using test::random_values;
using test::RandomWeight;

TEST(Reference, RandomShapesWithResidualMatchExact) {
  std::mt19937 rng(7);
  for (const Type type : {Type::F32, Type::Q8_0, Type::Q4_1, Type::Q4_K, Type::IQ4_XS}) {
    for (const auto& [m, k, rows] : {std::tuple{1, 256, 1}, {37, 512, 3}, {130, 768, 9}}) {
      const RandomWeight q(type, m, k, rng);
      const std::vector<float> x = random_values(static_cast<size_t>(rows * k), rng);
      const std::vector<float> residual = random_values(static_cast<size_t>(rows * m), rng);
      const std::vector<double> exact = test::exact_plus(q.w, x.data(), rows, residual.data());
      std::vector<float> y(exact.size());
      matmul(q.w, x.data(), rows, y.data(), residual.data(), {.path = Path::Ref, .threads = 2});
      EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 1e-10) << type_info(type)->name << " m=" << m;
    }
  }
}

TEST(Reference, MulMatIdEqualsOneMatmulPerSlot) {
  std::mt19937 rng(11);
  const int64_t experts = 5, m = 24, k = 256, tokens = 7, slots = 3;
  const RandomWeight q(Type::Q4_K, m, k, rng, experts);
  std::vector<int32_t> ids(static_cast<size_t>(tokens * slots));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7 + i / 3) % 4);  // expert 4 unused
  for (const int64_t act_slots : {int64_t{1}, slots}) {
    const std::vector<float> act = random_values(static_cast<size_t>(tokens * act_slots * k), rng);
    const std::vector<float> residual = random_values(static_cast<size_t>(tokens * slots * m), rng);
    std::vector<float> y(static_cast<size_t>(tokens * slots * m));
    mul_mat_id(q.w, act.data(), tokens, act_slots, ids.data(), slots, y.data(), residual.data(), {.path = Path::Ref});
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t s = 0; s < slots; ++s) {
        const Weight expert = test::expert_weight(q.w, ids[static_cast<size_t>(t * slots + s)]);
        const float* row = act.data() + (t * act_slots + (act_slots == 1 ? 0 : s)) * k;
        std::vector<float> want(static_cast<size_t>(m));
        const size_t at = static_cast<size_t>((t * slots + s) * m);
        matmul(expert, row, 1, want.data(), residual.data() + at, {.path = Path::Ref});
        EXPECT_EQ(std::memcmp(want.data(), y.data() + at, want.size() * sizeof(float)), 0) << t << "," << s;
      }
    }
  }
}

// The call throws an error of `kind` whose message holds `fragment`.
template <typename F>
void expect_error(Error::Kind kind, const std::string& fragment, F&& call) {
  const std::string message = test::error_of(kind, call);
  EXPECT_NE(message.find(fragment), std::string::npos) << "expected an error holding \"" << fragment << "\": " << message;
}

TEST(Reference, BadArgumentsAreClearErrors) {
  std::mt19937 rng(3);
  const RandomWeight q(Type::Q8_0, 4, 64, rng, 2);
  std::vector<float> x(64 * 4), y(64);
  std::vector<int32_t> ids = {0, 2};
  expect_error(Error::Kind::BadInput, "expert id 2 (token 0, slot 1)",
               [&] { mul_mat_id(q.w, x.data(), 1, 1, ids.data(), 2, y.data()); });
  expect_error(Error::Kind::BadUsage, "need 1 or 2",
               [&] { mul_mat_id(q.w, x.data(), 1, 3, ids.data(), 2, y.data()); });
  expect_error(Error::Kind::BadUsage, "use mul_mat_id", [&] { matmul(q.w, x.data(), 1, y.data()); });

  Weight odd = q.w;
  odd.experts = 1;
  odd.k = 48;
  odd.name = "blk.0.ffn_up";
  expect_error(Error::Kind::BadInput, "tensor blk.0.ffn_up: row length 48 is not a multiple of the q8_0 block size 32",
               [&] { matmul(odd, x.data(), 1, y.data()); });
  Weight ints = odd;
  ints.type = Type::I32;
  expect_error(Error::Kind::BadInput, "type i32 is not a weight format", [&] { matmul(ints, x.data(), 1, y.data()); });
  Weight unknown = odd;
  unknown.type = static_cast<Type>(77);
  expect_error(Error::Kind::BadInput, "unknown type id 77", [&] { matmul(unknown, x.data(), 1, y.data()); });
  expect_error(Error::Kind::BadUsage, "cannot quantize to iq2_xs", [&] { quantize(Type::IQ2_XS, x.data(), 1, 256); });
  expect_error(Error::Kind::BadUsage, "need a multiple of 256", [&] { quantize(Type::Q4_K, x.data(), 1, 64); });
}

}  // namespace
}  // namespace ggufmm
