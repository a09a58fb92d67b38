// The results of `ggufmm bench`, written as an aligned table, JSON, CSV or Markdown.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench_limits.hpp"

namespace ggufmm::cli {

struct BenchResult {
  std::string type;
  int64_t m, k, n;
  std::string path;
  int threads;
  double us;           // median time of one product
  double gflops;       // 2 m k n per second
  double weight_gbps;  // weight bytes read per second
  double roof_frac;    // of the machine's limit that binds: read bandwidth below 8 rows, int8 compute from 8
};

inline const std::vector<std::string> kReportFormats = {"table", "json", "csv", "md"};

// Writes to stdout in one of kReportFormats.
void print_report(std::string_view format, const MachineLimits& machine, const std::vector<BenchResult>& results);

}  // namespace ggufmm::cli
