// Non-finite and extreme inputs: NaN, infinite, subnormal and zero block scales, and NaN, infinite and huge
// activations. Every path must classify each output as the exact product does (NaN, +inf, -inf or finite).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "test_support.hpp"

namespace ggufmm {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Where the f16 scale d of a block sits (format data: ggml-common.h). IQ1_M spreads its scale over the top
// nibbles of its four scale words, and MXFP4's E8M0 exponent has no NaN or infinity; both are handled apart.
std::optional<size_t> f16_scale_offset(Type t) {
  switch (t) {
    case Type::Q2_K: return 80;
    case Type::Q3_K: return 108;
    case Type::Q6_K: return 208;
    case Type::TQ1_0: return 52;
    case Type::TQ2_0: return 64;
    case Type::IQ1_M:
    case Type::MXFP4: return std::nullopt;
    default: return 0;
  }
}

using test::is_float;

// Writes the bits of a scale into block 0 of a quantized row (f16 bits h, or for MXFP4 the exponent byte e).
void set_scale(Type t, uint8_t* block, uint16_t h, uint8_t e) {
  if (t == Type::MXFP4) {
    block[0] = e;
  } else if (t == Type::IQ1_M) {
    for (int j = 0; j < 4; ++j) {
      uint8_t& hi = block[48 + 2 * j + 1];
      hi = static_cast<uint8_t>((hi & 0x0f) | (((h >> (4 * j)) & 0xf) << 4));
    }
  } else {
    const size_t at = *f16_scale_offset(t);
    block[at] = static_cast<uint8_t>(h & 0xff);
    block[at + 1] = static_cast<uint8_t>(h >> 8);
  }
}

// Writes one value into element 0 of a float-format row.
void set_value(Type t, uint8_t* row, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  if (t == Type::F32) {
    std::memcpy(row, &v, 4);
  } else if (t == Type::BF16) {
    const uint16_t b = static_cast<uint16_t>(bits >> 16);
    std::memcpy(row, &b, 2);
  } else {  // F16: the cases used here, by their bits
    const uint16_t h = std::isnan(v) ? 0x7e00 : std::isinf(v) ? (v > 0 ? 0x7c00 : 0xfc00) : v == 0 ? 0 : 0x0001;
    std::memcpy(row, &h, 2);
  }
}

enum class Kind { NaN, PosInf, NegInf, Finite };

Kind kind_of(double v) {
  if (std::isnan(v)) return Kind::NaN;
  if (std::isinf(v)) return v > 0 ? Kind::PosInf : Kind::NegInf;
  return Kind::Finite;
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::NaN: return "NaN";
    case Kind::PosInf: return "+inf";
    case Kind::NegInf: return "-inf";
    case Kind::Finite: return "finite";
  }
  return "?";
}

class NumericEdges : public ::testing::TestWithParam<Type> {};

TEST_P(NumericEdges, EveryPathClassifiesOutputsAsTheReference) {
  const Type type = GetParam();
  const TypeInfo& t = *type_info(type);
  const int64_t k = 2 * std::max<int64_t>(t.block_size, 32), m = 37;
  std::mt19937 rng(static_cast<unsigned>(type));
  std::vector<uint8_t> bytes = test::random_weight(type, m, k, rng);
  const size_t row_bytes = bytes.size() / static_cast<size_t>(m);
  // Rows 0-3 get a NaN, +inf, subnormal and zero scale in their first block (float formats: that value); for
  // MXFP4 (no NaN or infinity) the largest and the smallest exponent instead. Row 4 gets -inf for the floats.
  struct Edge {
    float value;
    uint16_t f16;
    uint8_t e8m0;
  };
  const Edge edges[] = {{kNaN, 0x7e00, 0xff}, {kInf, 0x7c00, 0xfe}, {1e-7f, 0x0001, 0x00}, {0.0f, 0x0000, 0x01}};
  for (int r = 0; r < 4; ++r) {
    uint8_t* row = bytes.data() + static_cast<size_t>(r) * row_bytes;
    if (is_float(type)) {
      set_value(type, row, edges[r].value);
    } else {
      set_scale(type, row, edges[r].f16, edges[r].e8m0);
    }
  }
  if (is_float(type)) set_value(type, bytes.data() + 4 * row_bytes, -kInf);
  const Weight w{.type = type, .k = k, .m = m, .data = bytes.data(), .name = "edges"};
  // The table of offsets is right: a NaN scale makes its block's values NaN.
  if (type != Type::MXFP4) {
    const std::vector<float> values = dequantize(w);
    EXPECT_TRUE(std::isnan(values[0]) || std::isnan(values[1]));
  }

  // Activation rows: ordinary; one NaN; one +inf; one -inf; huge values (products and sums beyond f32); all 1e30.
  const int rows = 13;  // ordinary rows repeat so that the gemv (rows < 8) and tiled paths both see every case
  std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
  for (int r = 0; r < rows; ++r) {
    float* xr = x.data() + r * k;
    switch (r % 6) {
      case 1: xr[3] = kNaN; break;
      case 2: xr[k - 1] = kInf; break;
      case 3: xr[0] = -kInf; break;
      case 4: for (int64_t i = 0; i < k; ++i) xr[i] = std::copysign(3e38f, xr[i]); break;
      case 5: for (int64_t i = 0; i < k; ++i) xr[i] = 1e30f; break;
      default: break;
    }
  }
  const std::vector<double> exact = exact_matmul(w, x.data(), rows);
  for (const Path path : available_paths()) {
    for (const int n : {1, 6, rows}) {  // decode and prefill row counts
      std::vector<float> y(static_cast<size_t>(n * m));
      matmul(w, x.data(), n, y.data(), nullptr, {.path = path});
      int wrong = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        const Kind want = kind_of(static_cast<double>(static_cast<float>(exact[i])));
        const Kind got = kind_of(y[i]);
        if (want != got && wrong++ < 3) {
          ADD_FAILURE() << fmt::format("{} path {} rows {}: output (row {}, column {}) is {} ({}), the reference {} ({})",
                                       t.name, path_name(path), n, i / m, i % m, kind_name(got), y[i],
                                       kind_name(want), exact[i]);
        }
      }
      EXPECT_EQ(wrong, 0) << t.name << " " << path_name(path) << " rows " << n;
    }
  }
}

// y may be the residual itself: the result is the same as with a separate output, including the outputs that
// are recomputed from the residual (those of a NaN activation row).
TEST(NumericEdges, InPlaceResidualGivesTheSameResult) {
  std::mt19937 rng(7);
  const int64_t m = 16, k = 256, rows = 3;
  const std::vector<uint8_t> bytes = test::random_weight(Type::Q4_K, m, k, rng);
  const Weight w{.type = Type::Q4_K, .k = k, .m = m, .data = bytes.data()};
  std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
  x[5] = kNaN;
  std::vector<float> residual = test::random_values(static_cast<size_t>(rows * m), rng);
  residual[m + 2] = kInf;
  for (const Path path : available_paths()) {
    std::vector<float> apart(residual.size()), in_place = residual;
    matmul(w, x.data(), rows, apart.data(), residual.data(), {.path = path});
    matmul(w, x.data(), rows, in_place.data(), in_place.data(), {.path = path});
    EXPECT_EQ(std::memcmp(apart.data(), in_place.data(), apart.size() * sizeof(float)), 0) << path_name(path);
    EXPECT_TRUE(std::isnan(in_place[0])) << path_name(path);
    EXPECT_EQ(in_place[m + 2], kInf) << path_name(path);
  }
}

// mul_mat_id: an expert with a NaN and an infinite scale, tokens with NaN and infinite activations.
TEST(NumericEdges, ExpertsClassifyOutputsAsTheReference) {
  std::mt19937 rng(11);
  const int64_t experts = 3, m = 16, k = 256, tokens = 9, slots = 2;
  std::vector<uint8_t> bytes = test::random_weight(Type::Q4_K, experts * m, k, rng);
  const size_t row_bytes = bytes.size() / static_cast<size_t>(experts * m);
  set_scale(Type::Q4_K, bytes.data() + static_cast<size_t>(m) * row_bytes, 0x7e00, 0);          // expert 1, row 0
  set_scale(Type::Q4_K, bytes.data() + static_cast<size_t>(m + 1) * row_bytes, 0x7c00, 0);      // expert 1, row 1
  const Weight w{.type = Type::Q4_K, .k = k, .m = m, .experts = experts, .data = bytes.data()};
  std::vector<float> x = test::random_values(static_cast<size_t>(tokens * k), rng);
  x[2 * k + 7] = kNaN;
  x[5 * k] = kInf;
  std::vector<int32_t> ids(static_cast<size_t>(tokens * slots));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7 / 3) % experts);
  for (const Path path : available_paths()) {
    std::vector<float> y(static_cast<size_t>(tokens * slots * m));
    mul_mat_id(w, x.data(), tokens, 1, ids.data(), slots, y.data(), nullptr, {.path = path});
    for (int64_t ts = 0; ts < tokens * slots; ++ts) {
      const Weight expert = test::expert_weight(w, ids[static_cast<size_t>(ts)]);
      const std::vector<double> exact = exact_matmul(expert, x.data() + (ts / slots) * k, 1);
      for (int64_t o = 0; o < m; ++o) {
        EXPECT_EQ(kind_of(y[static_cast<size_t>(ts * m + o)]), kind_of(static_cast<float>(exact[static_cast<size_t>(o)])))
            << path_name(path) << " token " << ts / slots << " slot " << ts % slots << " column " << o;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, NumericEdges, ::testing::ValuesIn(test::weight_types()), test::type_test_name);

}  // namespace
}  // namespace ggufmm
