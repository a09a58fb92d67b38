#include "bench_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

namespace ggufmm::cli {
namespace {

// Every format but JSON prints the same cells: text, with numbers rounded for reading.
constexpr std::array<std::string_view, 10> kColumns = {"type", "m",  "k",      "n",           "path",
                                                        "threads", "us", "gflops", "weight_gbps", "roof_frac"};
constexpr bool is_text_column(size_t column) { return kColumns[column] == "type" || kColumns[column] == "path"; }

std::array<std::string, kColumns.size()> cells(const BenchResult& r) {
  return {r.type,
          fmt::to_string(r.m),
          fmt::to_string(r.k),
          fmt::to_string(r.n),
          r.path,
          fmt::to_string(r.threads),
          fmt::format("{:.1f}", r.us),
          fmt::format("{:.2f}", r.gflops),
          fmt::format("{:.2f}", r.weight_gbps),
          fmt::format("{:.3f}", r.roof_frac)};
}

std::string machine_line(const MachineLimits& m) {
  return fmt::format("machine: {} threads, read {:.2f} GB/s, int8 {:.1f} GOPS, bf16 {:.1f} GFLOPS, f32 {:.1f} GFLOPS",
                     m.threads, m.read_gbps, m.int8_gops, m.bf16_gflops, m.f32_gflops);
}

void print_json(const MachineLimits& machine, const std::vector<BenchResult>& results) {
  nlohmann::ordered_json out;
  out["machine"] = {{"read_gbps", machine.read_gbps},
                    {"int8_gops", machine.int8_gops},
                    {"bf16_gflops", machine.bf16_gflops},
                    {"f32_gflops", machine.f32_gflops},
                    {"threads", machine.threads}};
  out["results"] = nlohmann::ordered_json::array();
  for (const BenchResult& r : results) {
    out["results"].push_back({{"type", r.type},
                              {"m", r.m},
                              {"k", r.k},
                              {"n", r.n},
                              {"path", r.path},
                              {"threads", r.threads},
                              {"us", r.us},
                              {"gflops", r.gflops},
                              {"weight_gbps", r.weight_gbps},
                              {"roof_frac", r.roof_frac}});
  }
  fmt::print("{}\n", out.dump(2));
}

void print_csv(const std::vector<BenchResult>& results) {
  fmt::print("{}\n", fmt::join(kColumns, ","));
  for (const BenchResult& r : results) fmt::print("{}\n", fmt::join(cells(r), ","));
}

void print_markdown(const MachineLimits& machine, const std::vector<BenchResult>& results) {
  fmt::print("{}\n\n| {} |\n|", machine_line(machine), fmt::join(kColumns, " | "));
  for (size_t c = 0; c < kColumns.size(); ++c) fmt::print("{}|", is_text_column(c) ? ":---" : "---:");
  fmt::print("\n");
  for (const BenchResult& r : results) fmt::print("| {} |\n", fmt::join(cells(r), " | "));
}

void print_table(const MachineLimits& machine, const std::vector<BenchResult>& results) {
  std::vector<std::array<std::string, kColumns.size()>> rows;
  rows.reserve(results.size() + 1);
  rows.emplace_back();
  std::ranges::copy(kColumns, rows.front().begin());
  for (const BenchResult& r : results) rows.push_back(cells(r));
  std::array<size_t, kColumns.size()> width{};
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  fmt::print("{}\n\n", machine_line(machine));
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += is_text_column(c) ? fmt::format("{:<{}}  ", row[c], width[c]) : fmt::format("{:>{}}  ", row[c], width[c]);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    fmt::print("{}\n", line);
  }
}

}  // namespace

void print_report(std::string_view format, const MachineLimits& machine, const std::vector<BenchResult>& results) {
  if (format == "json") {
    print_json(machine, results);
  } else if (format == "csv") {
    print_csv(results);
  } else if (format == "md") {
    print_markdown(machine, results);
  } else {
    print_table(machine, results);
  }
}

}  // namespace ggufmm::cli
