// The activation quantizer of every level produces the portable one's integers, scales and sums, bit for bit:
// ordinary, tied (x * mul exactly halfway), zero, tiny, huge, NaN and infinite groups.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "kernels/kernels.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

using runtime::Isa;

struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> d, sum;
  std::vector<int16_t> qsum;
};

Quantized run(kernels::QuantizeActFn fn, const std::vector<float>& x, int rows, int64_t k) {
  Quantized out{std::vector<int8_t>(x.size()), std::vector<float>(x.size() / 32), std::vector<float>(x.size() / 16),
                std::vector<int16_t>(x.size() / 32)};
  fn(x.data(), rows, k, out.q.data(), out.d.data(), out.qsum.data(), out.sum.data());
  return out;
}

using test::same_bits;

TEST(QuantizeAct, EveryLevelMatchesThePortableOneBitForBit) {
  constexpr int rows = 3;
  constexpr int64_t k = 32 * 12;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (float& v : x) v = normal(rng);
  auto group = [&](int g) { return x.data() + 32 * g; };
  for (int i = 0; i < 32; ++i) group(1)[i] = 0.0f;                       // all zero
  for (int i = 0; i < 32; ++i) group(2)[i] = 1e-38f * normal(rng);       // tiny: counts as zero
  for (int i = 0; i < 32; ++i) group(3)[i] = 3e38f * (i % 2 ? 1 : -1);   // huge
  group(4)[7] = std::numeric_limits<float>::quiet_NaN();                 // NaN mid-group
  group(5)[31] = std::numeric_limits<float>::infinity();                 // infinity last
  group(6)[0] = -std::numeric_limits<float>::infinity();                 // -infinity first
  for (int i = 0; i < 32; ++i) group(7)[i] = static_cast<float>(i - 16) * 0.5f;  // halves: ties at 127 / 15.5
  group(8)[0] = 127.0f;
  for (int i = 1; i < 32; ++i) group(8)[i] = static_cast<float>(i) + 0.5f;      // exact ties after scaling
  for (int i = 0; i < 32; ++i) group(9)[i] = -0.0f;                              // negative zeros
  const Quantized want = run(kernels::kernels_for(Isa::Scalar).quantize_act, x, rows, k);
  EXPECT_EQ(want.q[32 * 8 + 1], 2);  // 1.5 ties to even
  for (const Isa isa : runtime::supported_isas()) {
    const kernels::QuantizeActFn fn = kernels::find_quantize_act(isa);
    const Quantized got = run(fn, x, rows, k);
    EXPECT_TRUE(same_bits(got.q, want.q)) << runtime::isa_name(isa);
    EXPECT_TRUE(same_bits(got.d, want.d)) << runtime::isa_name(isa);
    EXPECT_TRUE(same_bits(got.qsum, want.qsum)) << runtime::isa_name(isa);
    EXPECT_TRUE(same_bits(got.sum, want.sum)) << runtime::isa_name(isa);
  }
}

TEST(QuantizeAct, EverySimdLevelHasItsOwn) {
  for (const Isa isa : runtime::supported_isas()) {
    if (isa != Isa::Scalar) {
      EXPECT_NE(kernels::kernels_for(isa).quantize_act, nullptr) << runtime::isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace ggufmm
