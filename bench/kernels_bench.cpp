// Google Benchmark: one decode kernel (format x level x rows) on a weight that fits the last-level cache, so
// the kernel's own speed shows, not memory's. Reports weight bytes per second.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <random>
#include <vector>

#include "ggufmm/ggufmm.hpp"
#include "kernels/kernels.hpp"
#include "paths/paths.hpp"

namespace {

using namespace ggufmm;

constexpr int64_t kM = 1024, kK = 4096;

std::vector<uint8_t> random_weight(const TypeInfo& t, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  if (t.can_quantize) {
    std::vector<float> v(static_cast<size_t>(kM * kK));
    for (auto& e : v) e = normal(rng);
    return quantize(t.type, v.data(), kM, kK);
  }
  // Codebook formats: random codes; speed does not depend on the values.
  std::vector<uint8_t> bytes(static_cast<size_t>(kM * kK / t.block_size * t.block_bytes));
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : bytes) b = static_cast<uint8_t>(byte(rng));
  return bytes;
}

void run(benchmark::State& state, runtime::Isa isa, Type type, int rows) {
  std::mt19937 rng(1);
  const TypeInfo& t = *type_info(type);
  const std::vector<uint8_t> bytes = random_weight(t, rng);
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
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
