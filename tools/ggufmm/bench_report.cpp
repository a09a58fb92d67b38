#include "bench_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>
#include <nlohmann/json.hpp>

namespace ggufmm::cli {
namespace {

// Every format but JSON prints the same cells: text, with numbers rounded for reading.
using Row = std::vector<std::string>;

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
    return fmt::format("device: {}, read {:.2f} GB/s (its own device-to-device copy: {:.2f} GB/s read and "
                       "written), int8 {:.1f} GOPS", m.device, m.read_gbps, m.copy_gbps, m.int8_gops);
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

nlohmann::ordered_json json_of(const MachineLimits& machine, const std::vector<BenchResult>& results,
                               const DenseCacheStats& cache) {
  nlohmann::ordered_json out;
  out["machine"] = {{"read_gbps", machine.read_gbps},
                    {"int8_gops", machine.int8_gops},
                    {"bf16_gflops", machine.bf16_gflops},
                    {"f32_gflops", machine.f32_gflops},
                    {"threads", machine.threads}};
  if (!machine.device.empty()) {
    out["machine"]["device"] = machine.device;
    out["machine"]["copy_gbps"] = machine.copy_gbps;
  }
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
  return out;
}

// A table column's width: its header's, or that of the widest value it commonly holds.
size_t table_width(std::string_view column) {
  constexpr std::pair<std::string_view, std::string_view> kWidest[] = {
      {"type", "iq3_xxs"}, {"m", "14336"},   {"k", "14336"},        {"n", "512"},       {"path", "dense-copy"},
      {"routing", "uniform"}, {"us", "123456.7"}, {"gflops", "12345.67"}, {"weight_gbps", "1234.56"}};
  const auto it = std::ranges::find(kWidest, column, &std::pair<std::string_view, std::string_view>::first);
  return std::max(column.size(), it == std::end(kWidest) ? 0 : it->second.size());
}

}  // namespace

Report::Report(std::string_view format, bool moe, const Progress& progress)
    : format_(format), moe_(moe), progress_(progress) {
  for (const std::string_view column : columns(moe_)) width_.push_back(table_width(column));
}

void Report::print_row(const std::vector<std::string>& row) const {
  const auto header = columns(moe_);
  if (format_ == "csv") {
    fmt::print("{}\n", fmt::join(row, ","));
  } else if (format_ == "md") {
    fmt::print("| {} |\n", fmt::join(row, " | "));
  } else {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += is_text_column(header[c]) ? fmt::format("{:<{}}  ", row[c], width_[c])
                                        : fmt::format("{:>{}}  ", row[c], width_[c]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    fmt::print("{}\n", line);
  }
  std::fflush(stdout);  // a row as it finishes, into a pipe or a file too
}

void Report::start(const MachineLimits& machine) {
  machine_ = machine;
  if (format_ == "json") return;
  progress_.show("");
  const auto header = columns(moe_);
  if (format_ != "csv") fmt::print("{}\n\n", machine_line(machine));
  print_row({header.begin(), header.end()});
  if (format_ == "md") {
    fmt::print("|");
    for (const std::string_view column : header) fmt::print("{}|", is_text_column(column) ? ":---" : "---:");
    fmt::print("\n");
  }
}

void Report::add(const BenchResult& result) {
  results_.push_back(result);
  if (format_ == "json") return;
  progress_.show("");
  print_row(cells(result));
}

void Report::finish(const DenseCacheStats& dense_cache) {
  progress_.show("");
  if (format_ == "json") {
    fmt::print("{}\n", json_of(machine_, results_, dense_cache).dump(2));
  } else if (format_ != "csv" && dense_ran(dense_cache)) {
    fmt::print("\n{}\n", dense_cache_line(dense_cache));
  }
}

}  // namespace ggufmm::cli
