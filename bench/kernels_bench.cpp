// Google Benchmark, one family at a time on data that fits the cache, so each kernel's own speed shows, not
// memory's: the decode kernels (format x level x rows, weight bytes per second), the panel decoders (format,
// decoded values per second) and the int8 tile kernels (level x group x symmetry x rows, int8 operations per
// second, to hold against the machine's int8 peak).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <vector>

#include "format/random_blocks.hpp"
#include "ggufmm/ggufmm.hpp"
#include "kernels/kernels.hpp"
#include "paths/activations.hpp"
#include "paths/panel.hpp"
#include "paths/paths.hpp"

namespace {

using namespace ggufmm;

constexpr int64_t kM = 1024, kK = 4096;

void run(benchmark::State& state, runtime::Isa isa, Type type, int rows) {
  std::mt19937 rng(1);
  const std::vector<uint8_t> bytes = format::random_weight(type, kM, kK, rng);
  const Weight w{.type = type, .k = kK, .m = kM, .data = bytes.data()};
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(rows * kK)), y(static_cast<size_t>(rows * kM));
  for (auto& v : x) v = normal(rng);
  const paths::ActivationBuffer acts(x.data(), rows, kK, type, isa);
  const kernels::GemvFn fn = kernels::kernels_for(isa).gemv[static_cast<size_t>(type)];
  for (auto _ : state) {
    fn(bytes.data(), w.row_bytes(), 0, kM, acts.view(), y.data(), kM, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * w.total_bytes()));
}

// Two panels against `rows` activation rows: q8_0, q4_K, q6_K and q2_K take four of the tile forms (S32, S32O32,
// S16, and at AVX-512 S256O16, elsewhere S32O16: scales per 32, 16 or 256 values, offsets per 32 or 16 or none).
void run_tile(benchmark::State& state, runtime::Isa isa, Type type, int rows) {
  std::mt19937 rng(1);
  const std::vector<uint8_t> bytes = format::random_weight(type, kM, kK, rng);
  const Weight w{.type = type, .k = kK, .m = kM, .data = bytes.data()};
  paths::PanelBuffer panels[2];
  const paths::PanelShape shape =
      panels[0].decode(*format::find(type), w, 0, kernels::kPanelRows, isa) &
      panels[1].decode(*format::find(type), w, kernels::kPanelRows, kernels::kPanelRows, isa);
  const kernels::Panel views[2] = {panels[0].pack(shape), panels[1].pack(shape)};
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(rows * kK)), y(static_cast<size_t>(rows * 2 * kernels::kPanelRows));
  for (auto& v : x) v = normal(rng);
  const paths::ActivationBuffer acts(x.data(), rows, kK, type, isa);
  const kernels::TileKernel kernel = kernels::find_tile(isa, shape);
  const kernels::TileActivations view = acts.tile_view(shape.offset_group());
  constexpr int kColumns = 2 * kernels::kPanelRows;  // both panels' rows, one output column each
  for (auto _ : state) {
    for (int64_t r0 = 0; r0 < rows; r0 += kernel.rows) {
      const int nr = static_cast<int>(std::min<int64_t>(kernel.rows, rows - r0));
      kernel.run(views, 2, kColumns, view, r0, nr, {y.data(), kColumns}, nullptr);
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GOPS"] = benchmark::Counter(static_cast<double>(state.iterations()) * 2.0 * rows * kK * 2 *
                                                  kernels::kPanelRows / 1e9,
                                              benchmark::Counter::kIsRate);
}

// Decoding one panel (16 rows of k values) into the tile kernels' int8 form, packed by a level's kernel.
void run_panel(benchmark::State& state, runtime::Isa isa, Type type) {
  std::mt19937 rng(1);
  const std::vector<uint8_t> bytes = format::random_weight(type, kM, kK, rng);
  const Weight w{.type = type, .k = kK, .m = kM, .data = bytes.data()};
  paths::PanelBuffer panel;
  int64_t o0 = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(panel.pack(panel.decode(*format::find(type), w, o0, kernels::kPanelRows, isa)));
    o0 = (o0 + kernels::kPanelRows) % kM;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kernels::kPanelRows * kK));
}

const bool registered = [] {
  for (const runtime::Isa isa : runtime::supported_isas()) {
    for (const TypeInfo& t : all_types()) {
      if (!t.is_weight || !kernels::kernels_for(isa).gemv[static_cast<size_t>(t.type)]) continue;
      for (const int rows : {1, 4}) {
        benchmark::RegisterBenchmark(fmt::format("gemv/{}/{}/rows:{}", runtime::isa_name(isa), t.name, rows).c_str(),
                                     [=](benchmark::State& s) { run(s, isa, t.type, rows); });
      }
    }
  }
  for (const runtime::Isa isa : runtime::supported_isas()) {
    for (const Type type : {Type::Q8_0, Type::Q4_K, Type::Q6_K, Type::Q2_K}) {
      for (const int rows : {6, 64}) {
        benchmark::RegisterBenchmark(
            fmt::format("tile/{}/{}/rows:{}", runtime::isa_name(isa), type_info(type)->name, rows).c_str(),
            [=](benchmark::State& s) { run_tile(s, isa, type, rows); });
      }
    }
  }
  for (const runtime::Isa isa : runtime::supported_isas()) {
    for (const TypeInfo& t : all_types()) {
      if (!t.is_weight || !format::find(t.type)->decode) continue;
      benchmark::RegisterBenchmark(fmt::format("panel/{}/{}", runtime::isa_name(isa), t.name).c_str(),
                                   [=](benchmark::State& s) { run_panel(s, isa, t.type); });
    }
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
