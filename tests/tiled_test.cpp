// The prefill path: decoded panels reproduce ggml's dequantization exactly, the exact offsets matter, and the
// tile kernels at every level agree with the exact product (golden files, random shapes) and with each other.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "format/blocks.hpp"
#include "format/fp16.hpp"
#include "format/registry.hpp"
#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"
#include "kernels/tile.hpp"
#include "paths/activations.hpp"
#include "paths/panel.hpp"
#include "paths/paths.hpp"
#include "int8_floor.hpp"
#include "runtime/aligned.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

using runtime::Isa;

std::vector<std::string> quantized_types() {
  std::vector<std::string> out;
  for (const Type type : test::weight_types()) {
    if (format::find(type)->decode) out.emplace_back(type_info(type)->name);
  }
  return out;
}

// Up to 8 rows, the tiled path runs panels or row tiles (row_tiles unset: the level's choice for the type).
std::vector<float> run_tiled(Isa isa, const Weight& w, const float* x, int64_t rows, const float* residual,
                             std::optional<bool> row_tiles = {}) {
  std::vector<float> y(static_cast<size_t>(rows * w.m));
  paths::tiled_matmul({.w = w,
                       .x = x,
                       .rows = rows,
                       .y = y.data(),
                       .residual = residual,
                       .threads = 2,
                       .isa = isa,
                       .row_tiles = row_tiles});
  return y;
}

// The forms of the tiled path for `rows` rows: panels, and row tiles where they can take that many.
std::vector<bool> row_tile_forms(int64_t rows) {
  if (rows <= kernels::kMaxRowTileRows) return {false, true};
  return {false};
}

class TiledGolden : public ::testing::TestWithParam<std::string> {};

// Panels of w at `isa`, read back as scale * (code - 128) - offset, whose values differ in bits from `want`
// (row-major, want_k values a row, of which the first w.k are w's). A zero may differ in sign: Q3_K's AVX-512
// panels fold -sc into the codes, so their zeros take the sign of -d (no integer dot product sees it).
size_t panel_mismatches(const Weight& w, const std::vector<float>& want, int64_t want_k, Isa isa) {
  const format::Format& f = *format::find(w.type);
  paths::PanelBuffer buffer;
  size_t mismatches = 0;
  for (int64_t o0 = 0; o0 < w.m; o0 += kernels::kPanelRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kernels::kPanelRows, w.m - o0));
    const kernels::Panel& p = buffer.pack(buffer.decode(f, w, o0, rows, isa));
    for (int l = 0; l < kernels::kPanelRows; ++l) {
      for (int64_t i = 0; i < w.k; ++i) {
        const int q = p.codes[(i / 4) * 64 + l * 4 + i % 4] - 128;
        const float offset = p.offsets ? p.offsets[i / p.offset_group * 16 + l] : 0.0f;
        const float v = p.scales[i / p.group * 16 + l] * static_cast<float>(q) - offset;
        // The rows past the weight's last are zero.
        const float expected = l < rows ? want[static_cast<size_t>((o0 + l) * want_k + i)] : 0.0f;
        mismatches += std::memcmp(&v, &expected, sizeof v) != 0 && !(v == 0.0f && expected == 0.0f);
      }
    }
  }
  return mismatches;
}

// Every quantized format decodes its panels itself at the AVX-512 level, which has no packing of its own.
TEST(TiledPanels, EveryFormatHasAnAvx512PanelDecoder) {
  for (const std::string& name : quantized_types()) {
    EXPECT_NE(kernels::avx512_kernels().panel[static_cast<size_t>(format::find(name)->info.type)], nullptr) << name;
  }
}

// Formats whose AVX-512 panels keep one scale per block of 256 say so, so that the kernels scale once a block;
// those with scales per 32 (Q4_K, Q8_0) do not.
TEST(TiledPanels, OneScalePerBlockWhereTheFormatHasIt) {
  const std::vector<Isa> isas = runtime::supported_isas();
  if (std::find(isas.begin(), isas.end(), Isa::Avx512) == isas.end()) GTEST_SKIP() << "no AVX-512 on this machine";
  std::mt19937 rng(11);
  for (const auto& [name, k, blocks] : {std::tuple{"q2_K", 512, true}, {"q3_K", 512, true}, {"tq1_0", 512, true},
                                        {"tq2_0", 512, true}, {"q4_K", 512, false}, {"q8_0", 512, false}}) {
    const Type type = type_info(name)->type;
    const std::vector<uint8_t> bytes = test::random_weight(type, kernels::kPanelRows, k, rng);
    const Weight w{.type = type, .k = k, .m = kernels::kPanelRows, .data = bytes.data()};
    paths::PanelBuffer panel;
    EXPECT_EQ(panel.decode(*format::find(type), w, 0, kernels::kPanelRows, Isa::Avx512).scale_blocks, blocks) << name;
  }
}

// Random blocks hold every scale and level, the golden file perhaps not all: Q3_K's scale -32 at level -4 is where
// its AVX-512 panels' folded code reaches -128. Every level's panels are the format's dequantization all the same.
TEST(TiledPanels, RandomQ3KBlocksReproduceDequant) {
  constexpr int64_t kRows = kernels::kPanelRows, kK = 4 * format::kQK_K;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> d(-2.0f, 2.0f);
  std::vector<format::BlockQ3_K> blocks(static_cast<size_t>(kRows * kK / format::kQK_K));
  for (format::BlockQ3_K& b : blocks) {
    auto* raw = reinterpret_cast<uint8_t*>(&b);
    for (size_t i = 0; i < sizeof b; ++i) raw[i] = static_cast<uint8_t>(byte(rng));
    b.d = format::f32_to_fp16(d(rng));  // random bits could be a NaN
  }
  const Weight w{.type = Type::Q3_K, .k = kK, .m = kRows, .data = blocks.data()};
  std::vector<float> want(static_cast<size_t>(kRows * kK));
  format::find(Type::Q3_K)->dequantize(blocks.data(), want.data(), kRows * kK);
  for (const Isa isa : runtime::supported_isas()) {
    EXPECT_EQ(panel_mismatches(w, want, kK, isa), 0u) << runtime::isa_name(isa);
  }
}

// The codebook formats' panels decode through their gemv kernels' grid lookups (at AVX-512, IQ3's in registers,
// as 16-bit codes made from the grid): random codes over 1024 blocks use every grid entry, where a golden file
// may not, and every level's panels are the format's dequantization all the same.
TEST(TiledPanels, RandomCodebookBlocksReproduceDequant) {
  constexpr int64_t kRows = kernels::kPanelRows, kK = 64 * format::kQK_K;
  for (const Type type :
       {Type::IQ2_XXS, Type::IQ2_XS, Type::IQ2_S, Type::IQ3_XXS, Type::IQ3_S, Type::IQ1_S, Type::IQ1_M}) {
    std::mt19937 rng(5);
    const std::vector<uint8_t> bytes = test::random_weight(type, kRows, kK, rng);
    const Weight w{.type = type, .k = kK, .m = kRows, .data = bytes.data()};
    std::vector<float> want(static_cast<size_t>(kRows * kK));
    format::find(type)->dequantize(bytes.data(), want.data(), kRows * kK);
    for (const Isa isa : runtime::supported_isas()) {
      EXPECT_EQ(panel_mismatches(w, want, kK, isa), 0u) << type_info(type)->name << " " << runtime::isa_name(isa);
    }
  }
}

// Every panel of the golden weight, packed at every level, is ggml's dequantization, and every level finds the
// panels' shape (grouping, offsets) that the portable decoders do, or groups scales more coarsely where it folds
// them into the codes (Q3_K at AVX-512).
TEST_P(TiledGolden, PanelsReproduceGgmlDequantExactly) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const Weight w = file.weight("weight");
  const std::vector<float> want = file.read_f32("dequant");
  const format::Format& f = *format::find(w.type);
  paths::PanelBuffer buffer;
  for (const Isa isa : runtime::supported_isas()) {
    EXPECT_EQ(panel_mismatches(w, want, w.k, isa), 0u) << runtime::isa_name(isa);
    for (int64_t o0 = 0; o0 < w.m; o0 += kernels::kPanelRows) {
      const paths::PanelShape got = buffer.decode(f, w, o0, kernels::kPanelRows, isa);
      const paths::PanelShape portable = buffer.decode(f, w, o0, kernels::kPanelRows, Isa::Scalar);
      EXPECT_TRUE(got.scale_pairs || !portable.scale_pairs) << runtime::isa_name(isa) << " rows from " << o0;
      EXPECT_EQ(got.offset_pairs, portable.offset_pairs) << runtime::isa_name(isa) << " rows from " << o0;
      EXPECT_EQ(got.asymmetric, portable.asymmetric) << runtime::isa_name(isa) << " rows from " << o0;
    }
  }
}

// The same where a row ends inside a run of 256 values (the 32-value formats: 736 of the golden 768 values) and
// the last panel holds fewer than 16 rows (21 of the golden rows): the leading blocks of each row, copied.
TEST_P(TiledGolden, PartialRunsAndPanelsReproduceGgmlDequant) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const Weight full = file.weight("weight");
  const TypeInfo& info = *type_info(full.type);
  Weight w = full;
  w.m = 21;
  w.k = full.k - info.block_size;
  const size_t row_bytes = w.row_bytes();
  std::vector<uint8_t> data(static_cast<size_t>(w.m) * row_bytes);
  for (int64_t o = 0; o < w.m; ++o) {
    std::memcpy(data.data() + o * row_bytes, static_cast<const uint8_t*>(full.data) + o * full.row_bytes(), row_bytes);
  }
  w.data = data.data();
  const std::vector<float> want = file.read_f32("dequant");
  for (const Isa isa : runtime::supported_isas()) {
    EXPECT_EQ(panel_mismatches(w, want, full.k, isa), 0u) << runtime::isa_name(isa);
  }
}

// As for gemv (gemv_test.cpp): nothing beyond the activations' rounding (within 1e-10 of their floor), 1.2
// times ggml's NMSE for the 32-value block formats, 2e-4 per activation count and 1e-4 over both for the others.
// 8 rows both as panels and as a row tile.
TEST_P(TiledGolden, EveryLevelWithinAccuracyBounds) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const Weight w = file.weight("weight");
  const bool block32 = type_info(w.type)->block_size == 32;
  for (const Isa isa : runtime::supported_isas()) {
    test::NmseSum all;
    for (const int n : {8, 37}) {
      const auto [x, ggml, exact] = test::read_golden_product(file, n);
      for (const bool row_tiles : row_tile_forms(n)) {
        const std::vector<float> y = run_tiled(isa, w, x.data(), n, nullptr, row_tiles);
        const auto where = fmt::format("{} n={}{}", runtime::isa_name(isa), n, row_tiles ? " row tile" : "");
        const std::vector<double> floor = test::int8_floor(w, x.data(), n);
        EXPECT_LE(nmse(y.data(), floor.data(), y.size()), 1e-10) << where;
        const double ours = nmse(y.data(), exact.data(), y.size());
        EXPECT_LE(ours, block32 ? 1.2 * nmse(ggml.data(), exact.data(), y.size()) : 2e-4) << where;
        all.add(y.data(), exact.data(), y.size());
        // The exact output as residual doubles the result.
        const std::vector<float> y2 = run_tiled(isa, w, x.data(), n, exact.data(), row_tiles);
        EXPECT_LE(nmse(y2.data(), test::doubled(exact).data(), y2.size()), ours * 1.01) << where;
      }
    }
    if (!block32) {
      EXPECT_LE(all.value(), 1e-4) << runtime::isa_name(isa);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, TiledGolden, ::testing::ValuesIn(quantized_types()), test::string_test_name);

// Every level's tile kernels report the rows they gave a doubtful output (NaN, infinite, or beyond half the f32
// range), here through the residual, and only for the weight rows they store.
TEST(TiledKernels, ReportTheRowsGivenDoubtfulOutputs) {
  constexpr int64_t kK = 64;
  constexpr int kRows = 6, kValid = 15;
  std::vector<float> x(static_cast<size_t>(kRows * kK), 0.5f);
  runtime::AlignedVector<uint8_t> codes(static_cast<size_t>(kK * kernels::kPanelRows), uint8_t{129});
  const std::vector<float> scales(static_cast<size_t>(kK / 32 * kernels::kPanelRows), 1.0f);
  const kernels::Panel panel{.group = 32, .offset_group = 32, .codes = codes.data(), .scales = scales.data()};
  std::vector<float> residual(static_cast<size_t>(kRows * kernels::kPanelRows), 1.0f);
  const auto at = [](int r, int l) { return static_cast<size_t>(r * kernels::kPanelRows + l); };
  residual[at(1, 3)] = std::numeric_limits<float>::infinity();
  residual[at(2, kValid)] = std::numeric_limits<float>::quiet_NaN();  // a weight row past `valid`: not stored
  residual[at(3, 0)] = 3e38f;                                          // beyond half the range
  residual[at(4, 7)] = -1e38f;                                         // within it
  residual[at(5, 14)] = -std::numeric_limits<float>::quiet_NaN();
  for (const Isa isa : runtime::supported_isas()) {
    const paths::ActivationBuffer acts(x.data(), kRows, kK, Type::Q8_0, isa);
    std::vector<float> y(residual.size());
    for (int r0 = 0; r0 < kRows; r0 += 3) {
      const uint32_t rows = kernels::find_tile(isa, {}).run(&panel, 1, kValid, acts.tile_view(32), r0, 3,
                                                            {y.data(), kernels::kPanelRows, residual.data()}, nullptr);
      EXPECT_EQ(rows, r0 == 0 ? 0b010u : 0b101u) << runtime::isa_name(isa) << " rows from " << r0;
    }
  }
}

// Panels whose levels lie within [-R, R) let plain AVX2 multiply q + R directly and add up pairs of products in
// int16 (Panel::reach). At the extremes, every level R - 1 (the largest code, 2R - 1) against activations of
// +-127, no sum may saturate: every level's tile kernel gives the exact integer product.
TEST(TiledKernels, LevelsAtTheEdgeOfTheirReachStayExact) {
  constexpr int64_t kK = 256;
  constexpr int kRows = 5;
  std::vector<float> x(static_cast<size_t>(kRows * kK));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 32 + i / kK) % 2 ? 1.0f : -1.0f;  // quantizes to +-127
  for (const int reach : {16, 32, 64, 128}) {
    for (const int level : {reach - 1, -reach}) {
      runtime::AlignedVector<uint8_t> codes(static_cast<size_t>(kK * kernels::kPanelRows),
                                            static_cast<uint8_t>(level + 128));
      std::vector<float> scales(static_cast<size_t>(kK / 32 * kernels::kPanelRows));
      for (size_t i = 0; i < scales.size(); ++i) scales[i] = 0.5f + static_cast<float>(i % 7);
      const kernels::Panel panel{.group = 32, .offset_group = 32, .codes = codes.data(), .scales = scales.data(),
                                 .offsets = nullptr, .reach = reach};
      for (const Isa isa : runtime::supported_isas()) {
        const paths::ActivationBuffer acts(x.data(), kRows, kK, Type::Q8_0, isa);
        const kernels::TileFn fn = kernels::find_tile(isa, {}).run;
        std::vector<float> y(static_cast<size_t>(kRows * kernels::kPanelRows));
        fn(&panel, 1, kernels::kPanelRows, acts.tile_view(32), 0, kRows, {y.data(), kernels::kPanelRows}, nullptr);
        for (int r = 0; r < kRows; ++r) {
          for (int l = 0; l < kernels::kPanelRows; ++l) {
            double want = 0;
            for (int64_t g = 0; g < kK / 32; ++g) {
              const double sign = x[static_cast<size_t>(r * kK + 32 * g)];
              want += scales[static_cast<size_t>(g * kernels::kPanelRows + l)] * (1.0 / 127) * sign * 32 * 127 * level;
            }
            EXPECT_NEAR(y[static_cast<size_t>(r * kernels::kPanelRows + l)], want, 1e-5 * std::abs(want))
                << runtime::isa_name(isa) << " reach " << reach << " level " << level << " row " << r;
          }
        }
      }
    }
  }
}

// A tile kernel holds as many rows in registers as its form allows (TileKernel::rows) and takes up to
// kMaxTileRows in one call, the rest in turns: every level, form and row count gives what the portable kernel
// gives one row at a time, on two panels whose last 3 rows are not stored.
TEST(TiledKernels, EveryFormTakesUpToTheMostRowsInOneCall) {
  constexpr int64_t kK = 512;
  constexpr int kValid = 2 * kernels::kPanelRows - 3, kLdy = 2 * kernels::kPanelRows;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<float> x(static_cast<size_t>(kernels::kMaxTileRows * kK)), residual(x.size() / kK * kLdy);
  for (auto& v : x) v = normal(rng);
  for (auto& v : residual) v = normal(rng);
  const auto sized = [](int64_t n) { return static_cast<size_t>(n); };
  for (const kernels::PanelShape shape :
       {kernels::PanelShape{.scale_pairs = false},
        {.scale_pairs = false, .offset_pairs = false, .asymmetric = true},
        {},
        {.asymmetric = true},
        {.offset_pairs = false, .asymmetric = true},
        {.scale_blocks = true},
        {.offset_pairs = false, .asymmetric = true, .scale_blocks = true}}) {
    runtime::AlignedVector<uint8_t> codes[2];
    std::vector<float> scales[2], offsets[2];
    kernels::Panel panels[2];
    for (int p = 0; p < 2; ++p) {
      codes[p].resize(sized(kK * kernels::kPanelRows));
      for (auto& c : codes[p]) c = static_cast<uint8_t>(byte(rng));
      scales[p].resize(sized(kK / shape.group() * kernels::kPanelRows));
      offsets[p].resize(sized(kK / shape.offset_group() * kernels::kPanelRows));
      for (auto& s : scales[p]) s = normal(rng);
      for (auto& o : offsets[p]) o = normal(rng);
      // Blocks of 256 values share the scale of their first 32.
      for (size_t i = 0; i < scales[p].size() && shape.scale_blocks; ++i) {
        scales[p][i] = scales[p][i / (8 * kernels::kPanelRows) * 8 * kernels::kPanelRows + i % kernels::kPanelRows];
      }
      panels[p] = {.group = shape.group(), .offset_group = shape.offset_group(), .codes = codes[p].data(),
                   .scales = scales[p].data(), .offsets = shape.asymmetric ? offsets[p].data() : nullptr};
    }
    const std::string form = fmt::format("S{} O{}", shape.scale_blocks ? 256 : shape.group(),
                                         shape.asymmetric ? shape.offset_group() : 0);
    const paths::ActivationBuffer portable_acts(x.data(), kernels::kMaxTileRows, kK, Type::Q8_0, Isa::Scalar);
    std::vector<float> want(residual.size()), bare(residual.size());
    for (int r = 0; r < kernels::kMaxTileRows; ++r) {
      const kernels::TileFn portable = kernels::find_tile(Isa::Scalar, shape).run;
      const kernels::TileActivations xs = portable_acts.tile_view(shape.offset_group());
      portable(panels, 2, kValid, xs, r, 1, {want.data(), kLdy, residual.data()}, nullptr);
      portable(panels, 2, kValid, xs, r, 1, {bare.data(), kLdy}, nullptr);
    }
    // Rows read and stored through maps, as an expert's are: row r of a call is activation row x_at[r], stored
    // (with its residual) at output row y_at[r].
    const int64_t x_at[kernels::kMaxTileRows] = {5, 3, 0, 4, 1, 2}, y_at[kernels::kMaxTileRows] = {2, 4, 5, 1, 0, 3};
    for (const Isa isa : runtime::supported_isas()) {
      const kernels::TileKernel kernel = kernels::find_tile(isa, shape);
      EXPECT_GE(kernel.rows, 1) << form;
      EXPECT_LE(kernel.rows, kernels::kMaxTileRows) << form;
      const paths::ActivationBuffer acts(x.data(), kernels::kMaxTileRows, kK, Type::Q8_0, isa);
      for (int nr = 1; nr <= kernels::kMaxTileRows; ++nr) {
        std::vector<float> y(want.size(), -1.0f), mapped(want.size(), -1.0f);
        kernel.run(panels, 2, kValid, acts.tile_view(shape.offset_group()), 0, nr, {y.data(), kLdy, residual.data()},
                   nullptr);
        kernel.run(panels, 2, kValid,
                   paths::ActivationBuffer::mapped(acts, x_at, kernels::kMaxTileRows).tile_view(shape.offset_group()),
                   0, nr, {mapped.data(), kLdy, residual.data(), y_at}, nullptr);
        for (int r = 0; r < kernels::kMaxTileRows; ++r) {
          for (int l = 0; l < kLdy; ++l) {
            const size_t at = sized(r * kLdy + l);
            const auto where = fmt::format("{} {} rows {}: row {} lane {}", runtime::isa_name(isa), form, nr, r, l);
            if (r < nr && l < kValid) {
              EXPECT_NEAR(y[at], want[at], 1e-4f * (1.0f + std::abs(want[at]))) << where;
            } else {
              EXPECT_EQ(y[at], -1.0f) << where;  // not a row of the call, or a lane past `valid`
            }
            const size_t to = sized(y_at[r] * kLdy + l);
            if (r < nr && l < kValid) {
              const float mapped_want = bare[sized(x_at[r] * kLdy + l)] + residual[to];
              EXPECT_NEAR(mapped[to], mapped_want, 1e-4f * (1.0f + std::abs(mapped_want))) << where << " mapped";
            } else {
              EXPECT_EQ(mapped[to], -1.0f) << where << " mapped";
            }
          }
        }
      }
    }
  }
}

// Rounding the offset of w = d*q - m into an integer zero point (w ~ d*(q - z)) would make the error of the
// product at least 4 times larger than the exact offsets give: the exactness is measured, not assumed.
TEST(TiledExactness, IntegerZeroPointWouldBeFourTimesWorse) {
  for (const std::string name : {"q4_1", "q5_1", "q4_K", "q5_K"}) {
    GGUFMM_OPEN_GOLDEN(file, name + ".gguf");
    const Weight w = file.weight("weight");
    const auto [x, ggml, exact] = test::read_golden_product(file, 37);
    const std::vector<float> ours = run_tiled(runtime::active_isa(), w, x.data(), 37, nullptr);

    // The same weights with each offset rounded to a whole number of scale steps.
    const format::Format& f = *format::find(w.type);
    paths::PanelBuffer buffer;
    std::vector<float> rounded(static_cast<size_t>(w.m * w.k));
    for (int64_t o0 = 0; o0 < w.m; o0 += kernels::kPanelRows) {
      const kernels::Panel& p = buffer.pack(buffer.decode(f, w, o0, kernels::kPanelRows, runtime::active_isa()));
      ASSERT_NE(p.offsets, nullptr) << name;
      for (int l = 0; l < kernels::kPanelRows; ++l) {
        for (int64_t i = 0; i < w.k; ++i) {
          const float scale = p.scales[i / p.group * 16 + l], offset = p.offsets[i / p.offset_group * 16 + l];
          const float zero_point = scale != 0.0f ? std::nearbyint(offset / scale) : 0.0f;
          const int q = p.codes[(i / 4) * 64 + l * 4 + i % 4] - 128;
          rounded[static_cast<size_t>((o0 + l) * w.k + i)] = scale * (static_cast<float>(q) - zero_point);
        }
      }
    }
    const Weight f32{.type = Type::F32, .k = w.k, .m = w.m, .data = rounded.data()};
    std::vector<float> zp(exact.size());
    matmul(f32, x.data(), 37, zp.data(), nullptr, {.path = Path::Ref});
    const double exact_nmse = nmse(ours.data(), exact.data(), exact.size());
    const double zp_nmse = nmse(zp.data(), exact.data(), exact.size());
    RecordProperty(name, fmt::format("exact offsets {:.3e}, integer zero point {:.3e}", exact_nmse, zp_nmse));
    EXPECT_GE(zp_nmse, 4.0 * exact_nmse) << name << ": exact " << exact_nmse << ", zero point " << zp_nmse;
  }
}

class TiledRandom : public ::testing::TestWithParam<std::string> {};

TEST_P(TiledRandom, ShapesAgreeWithExactAndLevelsWithEachOther) {
  const Type type = type_info(GetParam())->type;
  const int64_t block = type_info(type)->block_size;
  std::mt19937 rng(static_cast<unsigned>(type) + 100);
  std::normal_distribution<float> normal;
  for (const auto& [m, blocks, rows] : {std::tuple{37, 1, 8}, {16, 2, 13}, {70, 3, 64}, {33, 1, 150}, {19, 2, 600}}) {
    const int64_t k = blocks * block;
    const std::vector<uint8_t> bytes = test::random_weight(type, m, k, rng);
    const Weight w{.type = type, .k = k, .m = m, .data = bytes.data()};
    std::vector<float> x(static_cast<size_t>(rows * k)), residual(static_cast<size_t>(rows * m));
    for (auto& v : x) v = normal(rng);
    for (auto& v : residual) v = normal(rng);
    const std::vector<double> exact = test::exact_plus(w, x.data(), rows, residual.data());
    const auto where = fmt::format("m={} k={} rows={}", m, k, rows);
    const std::vector<float> portable = run_tiled(Isa::Scalar, w, x.data(), rows, residual.data());
    EXPECT_LE(nmse(portable.data(), exact.data(), exact.size()), 1e-3) << where;
    for (const Isa isa : runtime::supported_isas()) {
      for (const bool row_tiles : row_tile_forms(rows)) {
        const std::vector<float> y = run_tiled(isa, w, x.data(), rows, residual.data(), row_tiles);
        EXPECT_LE(nmse(y.data(), portable.data(), y.size()), 1e-10)
            << runtime::isa_name(isa) << " " << where << (row_tiles ? " row tile" : "");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, TiledRandom, ::testing::ValuesIn(quantized_types()), test::string_test_name);

}  // namespace
}  // namespace ggufmm
