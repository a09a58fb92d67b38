// mul_mat_id on the expert-grouped kernels: ggml's golden files, and random routing of every kind, against the
// exact product of each (token, slot) row with its expert, at every kernel level.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#include "ggufmm/ggufmm.hpp"
#include "ggufmm/gguf.hpp"
#include "paths/activations.hpp"
#include "paths/paths.hpp"
#include "runtime/cpu.hpp"
#include "test_support.hpp"

namespace ggufmm {
namespace {

// The experts' rows are gathered once, in expert order, and each expert takes a slice: a slice must show exactly
// the codes, scales and sums of the rows it was gathered from, for the decode and the tile kernels alike.
TEST(ExpertRows, SlicesOfGatheredRowsAreThoseRows) {
  constexpr int64_t k = 256, rows = 5;
  std::mt19937 rng(3);
  const std::vector<float> x = test::random_values(static_cast<size_t>(rows * k), rng);
  const std::vector<int64_t> order = {3, 0, 3, 4, 1};
  for (const Type type : {Type::Q4_K, Type::F32}) {
    const paths::ActivationBuffer all(x.data(), rows, k, type, runtime::active_isa());
    const paths::ActivationBuffer gathered(all, order, 2);
    const paths::ActivationBuffer slice = paths::ActivationBuffer::slice(gathered, 1, 3);  // rows 0, 3, 4
    ASSERT_EQ(slice.rows(), 3);
    for (int r = 0; r < 3; ++r) {
      const auto from = static_cast<int>(order[static_cast<size_t>(r) + 1]);
      const kernels::Activations a = all.view(from, 1), b = slice.view(r, 1);
      const auto where = fmt::format("{} slice row {}", type_info(type)->name, r);
      if (type == Type::F32) {
        EXPECT_EQ(std::memcmp(a.f32, b.f32, k * sizeof(float)), 0) << where;
        continue;
      }
      EXPECT_EQ(std::memcmp(a.q, b.q, k), 0) << where;
      EXPECT_EQ(std::memcmp(a.d, b.d, k / 32 * sizeof(float)), 0) << where;
      EXPECT_EQ(std::memcmp(a.qsum, b.qsum, k / 32 * sizeof(int16_t)), 0) << where;
      EXPECT_EQ(std::memcmp(a.sum, b.sum, k / 16 * sizeof(float)), 0) << where;
      for (const int group : {16, 32}) {
        const kernels::TileActivations ta = all.tile_view(group), tb = slice.tile_view(group);
        EXPECT_EQ(std::memcmp(ta.q + from * k, tb.q + r * k, k), 0) << where;
        const int64_t per_row = k / group;
        EXPECT_EQ(std::memcmp(ta.group + from * per_row, tb.group + r * per_row, per_row * sizeof(kernels::TileGroup)), 0)
            << where << " groups of " << group;
      }
    }
  }
}

class MoePaths : public ::testing::TestWithParam<std::string> {};

TEST_P(MoePaths, EveryPathMatchesExact) {
  GGUFMM_OPEN_GOLDEN(file, GetParam() + ".gguf");
  const test::MoeGoldenCall c = test::read_moe_golden(file);
  for (const Path p : available_paths()) {
    std::vector<float> y(c.exact.size());
    mul_mat_id(c.w, c.act.data(), c.tokens, c.act_slots, c.ids.data(), c.slots, y.data(), nullptr, {.path = p});
    EXPECT_LE(nmse(y.data(), c.exact.data(), y.size()), p == Path::Ref ? 1e-10 : 1e-4) << path_name(p);
  }
}

INSTANTIATE_TEST_SUITE_P(AllFiles, MoePaths, ::testing::ValuesIn(test::kMoeGoldenFiles), test::string_test_name);

// Runs: tokens in runs of 9, each run to two experts of its own, so that with a shared activation row per token an
// expert's rows are consecutive rows of the call's, from past the first on, enough for the tile kernels.
enum class Routing { Uniform, Skewed, OneExpert, Runs };
constexpr int64_t kRunTokens = 9;

struct Case {
  int64_t experts, slots, tokens;
  Routing routing;
};

// Uniform, skewed (most rows to two experts, some experts empty), all to one, top-1, slots == experts, runs.
constexpr Case kCases[] = {{8, 2, 5, Routing::Uniform},    {8, 4, 40, Routing::Skewed}, {6, 3, 30, Routing::OneExpert},
                           {5, 1, 23, Routing::Uniform},   {4, 4, 11, Routing::Uniform}, {16, 8, 64, Routing::Skewed},
                           {8, 2, 27, Routing::Runs}};

class MoeRandom : public ::testing::TestWithParam<Type> {};

TEST_P(MoeRandom, RoutingOfEveryKindMatchesExact) {
  const Type type = GetParam();
  const int64_t k = 2 * std::max<int64_t>(type_info(type)->block_size, 32), m = 40;
  std::mt19937 rng(static_cast<unsigned>(type) + 7);
  std::normal_distribution<float> normal;
  for (const Case& c : kCases) {
    const test::RandomWeight weight(type, m, k, rng, c.experts);
    const Weight& w = weight.w;
    std::vector<int32_t> ids(static_cast<size_t>(c.tokens * c.slots));
    for (int64_t t = 0; t < c.tokens; ++t) {
      // Distinct experts per token, as a router picks them.
      std::vector<int32_t> order(static_cast<size_t>(c.experts));
      std::iota(order.begin(), order.end(), 0);
      if (c.routing == Routing::Uniform) std::shuffle(order.begin(), order.end(), rng);
      if (c.routing == Routing::Skewed && rng() % 4 == 0) std::shuffle(order.begin(), order.end(), rng);
      for (int64_t s = 0; s < c.slots; ++s) {
        int32_t& id = ids[static_cast<size_t>(t * c.slots + s)];
        id = c.routing == Routing::OneExpert ? 2 : order[static_cast<size_t>(s)];
        if (c.routing == Routing::Runs) id = static_cast<int32_t>(c.slots * (t / kRunTokens) + s);
      }
    }
    for (const int64_t act_slots : {int64_t{1}, c.slots}) {
      std::vector<float> act(static_cast<size_t>(c.tokens * act_slots * k));
      std::vector<float> residual(static_cast<size_t>(c.tokens * c.slots * m));
      for (auto& v : act) v = normal(rng);
      for (auto& v : residual) v = normal(rng);
      // The exact product, one (token, slot) at a time.
      std::vector<double> exact(residual.size());
      for (int64_t ts = 0; ts < c.tokens * c.slots; ++ts) {
        const Weight expert = test::expert_weight(w, ids[static_cast<size_t>(ts)]);
        const float* row = act.data() + ((ts / c.slots) * act_slots + (act_slots == 1 ? 0 : ts % c.slots)) * k;
        const std::vector<double> e = exact_matmul(expert, row, 1);
        for (int64_t o = 0; o < m; ++o) exact[static_cast<size_t>(ts * m + o)] = e[static_cast<size_t>(o)] + residual[static_cast<size_t>(ts * m + o)];
      }
      // Each expert group through gemv or tiled by the crossover: the built-in one, and one of 8 rows, so that
      // both kernels see groups of every size; at every kernel level the machine runs (the crossover is the
      // active level's, whichever level runs the call).
      for (const bool early_tiles : {false, true}) {
        set_profile(early_tiles ? std::optional(PathProfile{test::active_isa_name(), 2,
                                                            {{type, false, 8, 0}, {type, true, 8, 0}}})
                                : std::nullopt);
        for (const runtime::Isa isa : runtime::supported_isas()) {
          std::vector<float> y(residual.size());
          paths::moe_mul_mat_id({w, act.data(), c.tokens, act_slots, ids.data(), c.slots, y.data(), residual.data(),
                                 2, isa});
          EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 1e-3)
              << fmt::format("{} experts={} slots={} tokens={} act_slots={} tiles from 8 rows: {}",
                             runtime::isa_name(isa), c.experts, c.slots, c.tokens, act_slots, early_tiles);
        }
      }
      set_profile(std::nullopt);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, MoeRandom, ::testing::ValuesIn(test::weight_types()), test::type_test_name);

}  // namespace
}  // namespace ggufmm
