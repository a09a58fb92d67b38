#include "bench_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

namespace ggufmm::cli {
namespace {

// Every format but JSON prints the same cells: text, with numbers rounded for reading.
using Row = std::vector<std::string>;

bool any_moe(const std::vector<BenchResult>& results) {
  return std::ranges::any_of(results, [](const BenchResult& r) { return r.moe.has_value(); });
}

// A mixture of experts' columns come after "k" (each inserted there, so listed in reverse).
constexpr size_t kMoeAt = 3;

std::vector<std::string_view> columns(bool moe) {
  std::vector<std::string_view> out = {"type",    "m",  "k",      "n",           "path",
                                       "threads", "us", "gflops", "weight_gbps", "roof_frac"};
  if (moe) {
    for (const std::string_view column : {"routing", "top_k", "experts"}) out.emplace(out.begin() + kMoeAt, column);
  }
  return out;
}

bool is_text_column(std::string_view column) { return column == "type" || column == "path" || column == "routing"; }

Row cells(const BenchResult& r) {
  Row out = {r.type,
             fmt::to_string(r.m),
             fmt::to_string(r.k),
             fmt::to_string(r.n),
             r.path,
             fmt::to_string(r.threads),
             fmt::format("{:.1f}", r.us),
             fmt::format("{:.2f}", r.gflops),
             fmt::format("{:.2f}", r.weight_gbps),
             fmt::format("{:.3f}", r.roof_frac)};
  if (r.moe) {
    for (std::string cell : {r.moe->routing, fmt::to_string(r.moe->top_k), fmt::to_string(r.moe->experts)}) {
      out.emplace(out.begin() + kMoeAt, std::move(cell));
    }
  }
  return out;
}

std::string machine_line(const MachineLimits& m) {
  if (!m.device.empty()) {
    return fmt::format("device: {}, read {:.2f} GB/s, int8 {:.1f} GOPS", m.device, m.read_gbps, m.int8_gops);
  }
  return fmt::format("machine: {} threads, read {:.2f} GB/s, int8 {:.1f} GOPS, bf16 {:.1f} GFLOPS, f32 {:.1f} GFLOPS",
                     m.threads, m.read_gbps, m.int8_gops, m.bf16_gflops, m.f32_gflops);
}

bool dense_ran(const DenseCacheStats& c) { return c.hits + c.misses > 0; }

std::string dense_cache_line(const DenseCacheStats& c) {
  constexpr double kMiB = 1 << 20;
  return fmt::format("dense cache: {} hits, {} misses, {} evictions; {} copies holding {:.1f} MiB (peak {:.1f} MiB)",
                     c.hits, c.misses, c.evictions, c.entries, c.bytes_held / kMiB, c.peak_bytes / kMiB);
}

void print_json(const MachineLimits& machine, const std::vector<BenchResult>& results, const DenseCacheStats& cache) {
  nlohmann::ordered_json out;
  out["machine"] = {{"read_gbps", machine.read_gbps},
                    {"int8_gops", machine.int8_gops},
                    {"bf16_gflops", machine.bf16_gflops},
                    {"f32_gflops", machine.f32_gflops},
                    {"threads", machine.threads}};
  if (!machine.device.empty()) out["machine"]["device"] = machine.device;
  out["results"] = nlohmann::ordered_json::array();
  for (const BenchResult& r : results) {
    nlohmann::ordered_json result = {{"type", r.type}, {"m", r.m}, {"k", r.k}};
    if (r.moe) {
      result["experts"] = r.moe->experts;
      result["top_k"] = r.moe->top_k;
      result["routing"] = r.moe->routing;
    }
    result["n"] = r.n;
    result["path"] = r.path;
    result["threads"] = r.threads;
    result["us"] = r.us;
    result["gflops"] = r.gflops;
    result["weight_gbps"] = r.weight_gbps;
    result["roof_frac"] = r.roof_frac;
    out["results"].push_back(std::move(result));
  }
  if (dense_ran(cache)) {
    out["dense_cache"] = {{"hits", cache.hits},           {"misses", cache.misses},
                          {"evictions", cache.evictions}, {"entries", cache.entries},
                          {"bytes_held", cache.bytes_held}, {"peak_bytes", cache.peak_bytes}};
  }
  fmt::print("{}\n", out.dump(2));
}

void print_csv(const std::vector<BenchResult>& results) {
  fmt::print("{}\n", fmt::join(columns(any_moe(results)), ","));
  for (const BenchResult& r : results) fmt::print("{}\n", fmt::join(cells(r), ","));
}

void print_markdown(const MachineLimits& machine, const std::vector<BenchResult>& results) {
  const auto header = columns(any_moe(results));
  fmt::print("{}\n\n| {} |\n|", machine_line(machine), fmt::join(header, " | "));
  for (const std::string_view column : header) fmt::print("{}|", is_text_column(column) ? ":---" : "---:");
  fmt::print("\n");
  for (const BenchResult& r : results) fmt::print("| {} |\n", fmt::join(cells(r), " | "));
}

void print_table(const MachineLimits& machine, const std::vector<BenchResult>& results) {
  const auto header = columns(any_moe(results));
  std::vector<Row> rows;
  rows.reserve(results.size() + 1);
  rows.emplace_back(header.begin(), header.end());
  for (const BenchResult& r : results) rows.push_back(cells(r));
  std::vector<size_t> width(header.size());
  for (const Row& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  fmt::print("{}\n\n", machine_line(machine));
  for (const Row& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += is_text_column(header[c]) ? fmt::format("{:<{}}  ", row[c], width[c])
                                        : fmt::format("{:>{}}  ", row[c], width[c]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    fmt::print("{}\n", line);
  }
}

}  // namespace

void print_report(std::string_view format, const MachineLimits& machine, const std::vector<BenchResult>& results,
                  const DenseCacheStats& dense_cache) {
  if (format == "json") {
    print_json(machine, results, dense_cache);
  } else if (format == "csv") {
    print_csv(results);
  } else {
    if (format == "md") {
      print_markdown(machine, results);
    } else {
      print_table(machine, results);
    }
    if (dense_ran(dense_cache)) fmt::print("\n{}\n", dense_cache_line(dense_cache));
  }
}

}  // namespace ggufmm::cli
