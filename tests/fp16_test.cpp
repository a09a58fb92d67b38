// The 16-bit float conversions: binary16 against the F16C hardware conversion (round to nearest even), bfloat16
// against a definition written from scratch: the nearer neighbour, ties to the even one.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <random>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GGUFMM_HAVE_X86 1
#endif

#include "format/fp16.hpp"

namespace ggufmm::format {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t b) { return std::bit_cast<float>(b); }

// Calls visit with f32 patterns that stress a 16-bit conversion: every binary16 value, the halfway points between
// neighbours and the patterns one or two ulps either side of both, a stride through all 2^32 patterns, random
// patterns, and the specials (zeros, infinities, NaNs with various payloads, f32 subnormals, the overflow threshold).
template <class Visit>
void for_each_f32_sample(Visit visit) {
  const auto around = [&](uint32_t centre) {
    for (int d = -2; d <= 2; ++d) visit(centre + static_cast<uint32_t>(d));
  };
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = fp16_to_f32(static_cast<uint16_t>(h));
    const float hi = h + 1 == 0x7c00 ? 65520.0f : fp16_to_f32(static_cast<uint16_t>(h + 1));  // 65520: to infinity
    for (const uint32_t sign : {0u, 0x80000000u}) {
      around(bits(lo) | sign);
      around(bits((lo + hi) / 2) | sign);  // exact: both have at most 11 significant bits
    }
  }
  for (uint64_t x = 0; x < (uint64_t{1} << 32); x += 251) visit(static_cast<uint32_t>(x));
  std::mt19937 rng(1);
  for (int i = 0; i < 1 << 22; ++i) visit(static_cast<uint32_t>(rng()));
  for (const uint32_t special : {0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x7f7fffffu, 0x7f800000u,
                                 0x7f800001u, 0x7fc00000u, 0x7fbfffffu, 0x7fffffffu, 0x7f802000u, 0x7fa00000u,
                                 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x33000000u, 0x33000001u, 0x32ffffffu}) {
    visit(special);
    visit(special | 0x80000000u);
  }
}

#ifdef GGUFMM_HAVE_X86

__attribute__((target("f16c"))) uint16_t hw_to_fp16(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT); }
__attribute__((target("f16c"))) float hw_from_fp16(uint16_t h) { return _cvtsh_ss(h); }

#define GGUFMM_REQUIRE_F16C() \
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C conversion to compare with"

TEST(Fp16, HalfToFloatMatchesF16cForEveryPattern) {
  GGUFMM_REQUIRE_F16C();
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float ours = fp16_to_f32(static_cast<uint16_t>(h));
    const float hw = hw_from_fp16(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      // The hardware quiets signalling NaNs; ours keeps the payload as it is. Either way sign and payload survive.
      ASSERT_TRUE(std::isnan(ours)) << std::hex << h;
      ASSERT_EQ(bits(ours) | 0x00400000u, bits(hw)) << std::hex << h;
    } else {
      ASSERT_EQ(bits(ours), bits(hw)) << std::hex << h;
    }
  }
}

TEST(Fp16, EveryHalfRoundTrips) {
  GGUFMM_REQUIRE_F16C();
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const uint16_t back = f32_to_fp16(fp16_to_f32(half));
    ASSERT_EQ(back, hw_to_fp16(hw_from_fp16(half))) << std::hex << h;
    // NaNs come back quiet; everything else comes back as it was.
    ASSERT_EQ(back, (h & 0x7fff) <= 0x7c00 ? h : h | 0x0200u) << std::hex << h;
  }
}

TEST(Fp16, FloatToHalfMatchesF16c) {
  GGUFMM_REQUIRE_F16C();
  size_t mismatches = 0;
  uint32_t first = 0;
  for_each_f32_sample([&](uint32_t x) {
    if (f32_to_fp16(from_bits(x)) != hw_to_fp16(from_bits(x)) && mismatches++ == 0) first = x;
  });
  EXPECT_EQ(mismatches, 0u) << "first at f32 pattern 0x" << std::hex << first << ": ours 0x"
                            << f32_to_fp16(from_bits(first)) << ", F16C 0x" << hw_to_fp16(from_bits(first));
}

#endif  // GGUFMM_HAVE_X86

TEST(Fp16, HalfEdgeCasesRoundToNearestEven) {
  EXPECT_EQ(f32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65519.996f), 0x7bff);
  EXPECT_EQ(f32_to_fp16(65520.0f), 0x7c00);   // halfway to the next binade rounds to even: infinity
  EXPECT_EQ(f32_to_fp16(0x1p-24f), 0x0001);   // smallest subnormal
  EXPECT_EQ(f32_to_fp16(0x1p-25f), 0x0000);   // halfway to zero: even
  EXPECT_EQ(f32_to_fp16(0x1.8p-24f), 0x0002);  // halfway between 1 and 2 ulps: even
  EXPECT_EQ(f32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_fp16(-INFINITY), 0xfc00);
  EXPECT_EQ(fp16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_f32(0x0001), 0x1p-24f);
}

// bfloat16 by definition: the magnitude's two neighbours among bfloat16 values (the larger may be the first value
// past the largest finite one, standing for infinity), the nearer one, on a tie the one with an even pattern.
// NaN stays NaN, with the quiet bit set.
uint16_t bf16_by_definition(float f) {
  const uint32_t x = bits(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  if (std::isinf(f)) return static_cast<uint16_t>(sign | 0x7f80u);
  const auto below = static_cast<uint16_t>((x & 0x7fffffffu) >> 16);
  const auto above = static_cast<uint16_t>(below + 1);
  const double magnitude = std::fabs(static_cast<double>(f));
  const double lo = from_bits(static_cast<uint32_t>(below) << 16);
  const double hi = above == 0x7f80 ? std::ldexp(1.0, 128) : from_bits(static_cast<uint32_t>(above) << 16);
  const double to_lo = magnitude - lo, to_hi = hi - magnitude;
  const uint16_t pick = to_lo < to_hi ? below : to_hi < to_lo ? above : (below % 2 == 0 ? below : above);
  return static_cast<uint16_t>(sign | pick);
}

TEST(Fp16, FloatToBf16MatchesDefinition) {
  size_t mismatches = 0;
  uint32_t first = 0;
  for_each_f32_sample([&](uint32_t x) {
    if (f32_to_bf16(from_bits(x)) != bf16_by_definition(from_bits(x)) && mismatches++ == 0) first = x;
  });
  // Halfway points of bfloat16 itself: every pattern with the dropped half exactly 0x8000, and its neighbours.
  for (uint32_t hi = 0; hi <= 0xffff; ++hi) {
    for (const uint32_t lo : {0x7fffu, 0x8000u, 0x8001u}) {
      const uint32_t x = hi << 16 | lo;
      if (f32_to_bf16(from_bits(x)) != bf16_by_definition(from_bits(x)) && mismatches++ == 0) first = x;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "first at f32 pattern 0x" << std::hex << first << ": ours 0x"
                            << f32_to_bf16(from_bits(first)) << ", by definition 0x"
                            << bf16_by_definition(from_bits(first));
}

TEST(Fp16, EveryBf16RoundTrips) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const float f = bf16_to_f32(half);
    ASSERT_EQ(bits(f), h << 16) << std::hex << h;
    ASSERT_EQ(f32_to_bf16(f), (h & 0x7fff) <= 0x7f80 ? h : h | 0x0040u) << std::hex << h;
  }
}

}  // namespace
}  // namespace ggufmm::format
