// The results of `ggufmm bench`, written as an aligned table, JSON, CSV or Markdown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_limits.hpp"
#include "ggufmm/ggufmm.hpp"

namespace ggufmm::cli {

// What a mixture-of-experts (mul_mat_id) case adds: its n counts tokens, each with top_k rows.
struct MoeCase {
  int64_t experts, top_k;
  std::string routing;  // how the experts were drawn
};

struct BenchResult {
  std::string type;
  int64_t m, k, n;
  std::string path;
  int threads;
  double us;           // median time of one product
  double gflops;       // 2 m k n per second
  double weight_gbps;  // weight bytes read per second
  double roof_frac;    // of the machine's limit that binds: read bandwidth below 8 rows, int8 compute from 8
  std::optional<MoeCase> moe;
};

inline const std::vector<std::string> kReportFormats = {"table", "json", "csv", "md"};

// Writes to stdout in one of kReportFormats. The results are all dense or all mixtures of experts, whose columns
// add experts, top_k and routing after k. Where the dense path ran, the dense cache's statistics follow the
// results (a line of the table and Markdown, "dense_cache" in JSON; CSV holds the results alone).
void print_report(std::string_view format, const MachineLimits& machine, const std::vector<BenchResult>& results,
                  const DenseCacheStats& dense_cache);

}  // namespace ggufmm::cli
