// The results of `ggufmm bench`, written as an aligned table, JSON, CSV or Markdown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_limits.hpp"
#include "ggufmm/ggufmm.hpp"
#include "timing.hpp"

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

// The report on stdout, in one of kReportFormats, written as the results come: the table, CSV and Markdown a row at
// a time (the table's columns as wide as common values need; a wider cell shifts its row), JSON whole at finish().
// The results are all dense or all mixtures of experts, whose columns add experts, top_k and routing after k.
// Where the dense path ran, the dense cache's statistics follow the results (a line of the table and Markdown,
// "dense_cache" in JSON; CSV holds the results alone).
class Report {
 public:
  // `progress` is cleared before each row, so that a row never lands on its line.
  Report(std::string_view format, bool moe, const Progress& progress);
  void start(const MachineLimits& machine);  // before the first result
  void add(const BenchResult& result);
  void finish(const DenseCacheStats& dense_cache);
  size_t count() const { return results_.size(); }

 private:
  void print_row(const std::vector<std::string>& cells) const;

  std::string format_;
  bool moe_;
  const Progress& progress_;
  MachineLimits machine_;
  std::vector<BenchResult> results_;
  std::vector<size_t> width_;  // the table's columns
};

}  // namespace ggufmm::cli
