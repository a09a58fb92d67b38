// `ggufmm bench` as a user runs it: every output format, random and model weights, mixtures of experts, usage
// errors. Tiny shapes, and the hidden --quick-limits so that measuring the machine takes a fraction of a second.
#include <gtest/gtest.h>

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "ggufmm/gguf.hpp"
#include "ggufmm/ggufmm.hpp"
#include "temp_dir.hpp"
#include "tool_runner.hpp"

namespace ggufmm {
namespace {

using test::TempDir;
using test::ToolRun;
using test::run_tool;

constexpr const char* kColumns[] = {"type", "m",  "k",      "n",           "path",
                                    "threads", "us", "gflops", "weight_gbps", "roof_frac"};

ToolRun bench(const std::string& args) { return run_tool("bench --quick-limits " + args); }

nlohmann::json bench_json(const std::string& args) {
  const ToolRun r = bench(args + " --format json");
  EXPECT_EQ(r.status, 0) << r.output;
  return nlohmann::json::parse(r.out);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t count_of(const std::string& text, char c) { return static_cast<size_t>(std::ranges::count(text, c)); }

TEST(BenchJson, HasTheMachineAndOneResultPerCase) {
  const auto out = bench_json("--type q4_0,q8_0 --m 64 --k 256 --n 1,8 --warm --threads 1");
  const auto& machine = out.at("machine");
  for (const char* key : {"read_gbps", "int8_gops", "f32_gflops"}) EXPECT_GT(machine.at(key).get<double>(), 0) << key;
  EXPECT_GE(machine.at("bf16_gflops").get<double>(), 0);
  EXPECT_EQ(machine.at("threads"), 1);

  const auto& results = out.at("results");
  ASSERT_EQ(results.size(), 4u);
  std::set<std::tuple<std::string, int64_t>> cases;
  for (const auto& r : results) {
    ASSERT_EQ(r.size(), std::size(kColumns)) << r;
    for (const char* key : kColumns) EXPECT_TRUE(r.contains(key)) << key;
    EXPECT_EQ(r.at("m"), 64);
    EXPECT_EQ(r.at("k"), 256);
    EXPECT_EQ(r.at("path"), "auto");
    EXPECT_EQ(r.at("threads"), 1);
    for (const char* key : {"us", "gflops", "weight_gbps", "roof_frac"}) EXPECT_GT(r.at(key).get<double>(), 0) << key;
    const double n = r.at("n").get<double>(), gflops = r.at("gflops").get<double>();
    EXPECT_NEAR(gflops, 2.0 * 64 * 256 * n / r.at("us").get<double>() / 1e3, 1e-6 * gflops);
    // The roof: reading the weight for decode's few rows, int8 arithmetic from 8 rows on.
    const double roof_frac = n < 8 ? r.at("weight_gbps").get<double>() / machine.at("read_gbps").get<double>()
                                   : gflops / machine.at("int8_gops").get<double>();
    EXPECT_NEAR(r.at("roof_frac").get<double>(), roof_frac, 1e-6 * roof_frac);
    cases.emplace(r.at("type"), r.at("n"));
  }
  EXPECT_EQ(cases, (std::set<std::tuple<std::string, int64_t>>{{"q4_0", 1}, {"q4_0", 8}, {"q8_0", 1}, {"q8_0", 8}}));
  EXPECT_FALSE(out.contains("dense_cache")) << "the dense path did not run";
}

TEST(BenchJson, DensePathReportsItsCache) {
  const auto out = bench_json("--type q4_0 --m 64 --k 256 --n 8 --warm --path dense");
  const auto& cache = out.at("dense_cache");
  // One weight: copied once, then found again by the timed calls.
  EXPECT_EQ(cache.at("misses"), 1);
  EXPECT_GT(cache.at("hits").get<int64_t>(), 0);
  EXPECT_EQ(cache.at("evictions"), 0);
  EXPECT_EQ(cache.at("entries"), 1);
  EXPECT_GE(cache.at("bytes_held").get<int64_t>(), 64 * 256 * 2) << "at least a 16-bit copy";
  EXPECT_EQ(cache.at("peak_bytes"), cache.at("bytes_held"));
}

TEST(BenchJson, PathAllRunsEveryPath) {
  const auto results = bench_json("--type q6_K --m 8 --k 256 --n 1 --warm --path all").at("results");
  std::vector<std::string> got, want;
  for (const auto& r : results) got.push_back(r.at("path"));
  for (const Path p : available_paths()) want.emplace_back(path_name(p));
  EXPECT_EQ(got, want);
}

TEST(BenchJson, RandomWeightsOfEveryKindAreTimed) {
  // Random blocks for the types ggufmm cannot quantize to, quantized random values for the others; q4_0's weight
  // is larger than the pool of random blocks, which it then repeats.
  const auto results = bench_json("--type iq2_xs,iq1_m,q4_0 --m 9 --k 8192 --n 1 --warm").at("results");
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) EXPECT_GT(r.at("weight_gbps").get<double>(), 0) << r;
}

TEST(BenchJson, ModelFileGivesItsDistinctWeightShapes) {
  const TempDir dir;
  const std::string path = dir.file("model.gguf");
  const std::vector<float> values(256 * 64, 0.5f);
  const auto q8 = quantize(Type::Q8_0, values.data(), 32, 256);
  const auto q4 = quantize(Type::Q4_0, values.data(), 64, 64);
  const auto norm = std::span(reinterpret_cast<const uint8_t*>(values.data()), 256 * sizeof(float));
  gguf::Writer writer;
  writer.add_tensor("blk.0.attn_q.weight", Type::Q8_0, {256, 32}, q8);
  writer.add_tensor("blk.1.attn_q.weight", Type::Q8_0, {256, 32}, q8);  // the same shape: timed once
  writer.add_tensor("blk.0.ffn_up_exps.weight", Type::Q4_0, {64, 16, 4}, q4);
  writer.add_tensor("blk.0.attn_norm.weight", Type::F32, {256}, norm);  // 1-D: not a weight
  writer.write(path);

  const auto all = bench_json(fmt::format("{} --n 1,3 --warm", path)).at("results");
  std::set<std::tuple<std::string, int64_t, int64_t>> shapes;
  for (const auto& r : all) shapes.emplace(r.at("type"), r.at("m"), r.at("k"));
  EXPECT_EQ(all.size(), 4u);
  EXPECT_EQ(shapes, (std::set<std::tuple<std::string, int64_t, int64_t>>{{"q8_0", 32, 256}, {"q4_0", 16, 64}}));

  // Cold (the default): rotating through copies of the file's bytes.
  const auto cold_q4 = bench_json(fmt::format("{} --type q4_0 --n 1", path)).at("results");
  ASSERT_EQ(cold_q4.size(), 1u);
  EXPECT_EQ(cold_q4[0].at("type"), "q4_0");

  const ToolRun none = bench(fmt::format("{} --type q6_K", path));
  EXPECT_EQ(none.status, 2) << none.output;
}

TEST(BenchMoe, ReportsEveryShapeTokenCountAndRouting) {
  // ggml's two MUL_MAT_ID cases, their matrices shrunk by --m and --k.
  const auto out = bench_json("--moe --type q4_0 --m 64 --k 256 --n 1,8 --warm --threads 1");
  const auto& results = out.at("results");
  ASSERT_EQ(results.size(), 8u);
  constexpr double kMatrixBytes = 64 * (256 / 32) * 18;  // q4_0: 18 bytes per 32 values
  std::set<std::tuple<int64_t, int64_t, std::string, int64_t>> cases;
  for (const auto& r : results) {
    ASSERT_EQ(r.size(), std::size(kColumns) + 3) << r;
    for (const char* key : kColumns) EXPECT_TRUE(r.contains(key)) << key;
    EXPECT_EQ(r.at("type"), "q4_0");
    EXPECT_EQ(r.at("m"), 64);
    EXPECT_EQ(r.at("k"), 256);
    EXPECT_EQ(r.at("path"), "auto");
    const double n = r.at("n").get<double>(), top_k = r.at("top_k").get<double>();
    const double us = r.at("us").get<double>(), gflops = r.at("gflops").get<double>();
    EXPECT_NEAR(gflops, 2.0 * 64 * 256 * n * top_k / us / 1e3, 1e-6 * gflops);  // every token's top_k rows
    // The bytes read: whole experts, at least one token's, at most every expert.
    const double experts_read = r.at("weight_gbps").get<double>() * us * 1e3 / kMatrixBytes;
    EXPECT_NEAR(experts_read, std::round(experts_read), 1e-6 * experts_read) << r;
    EXPECT_GE(std::round(experts_read), top_k) << r;
    EXPECT_LE(std::round(experts_read), std::min(n * top_k, r.at("experts").get<double>())) << r;
    EXPECT_GT(r.at("roof_frac").get<double>(), 0) << r;
    cases.emplace(r.at("experts"), r.at("top_k"), r.at("routing"), r.at("n"));
  }
  std::set<std::tuple<int64_t, int64_t, std::string, int64_t>> want;
  for (const auto& [experts, top_k] : {std::pair{128, 8}, std::pair{32, 4}}) {
    for (const char* routing : {"uniform", "skewed"}) {
      for (const int64_t n : {1, 8}) want.emplace(experts, top_k, routing, n);
    }
  }
  EXPECT_EQ(cases, want);
}

TEST(BenchMoe, TextAddsTheExpertColumns) {
  const ToolRun r = bench("--moe --type q8_0 --m 32 --k 32 --n 2 --warm --threads 1 --format csv");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.output;
  EXPECT_EQ(lines[0], "type,m,k,experts,top_k,routing,n,path,threads,us,gflops,weight_gbps,roof_frac");
  EXPECT_EQ(lines[1].rfind("q8_0,32,32,128,8,uniform,2,auto,1,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("q8_0,32,32,128,8,skewed,2,auto,1,", 0), 0u) << lines[2];
  EXPECT_EQ(lines[3].rfind("q8_0,32,32,32,4,uniform,2,auto,1,", 0), 0u) << lines[3];
}

TEST(BenchText, CsvHasAHeaderAndOneLinePerResult) {
  const ToolRun r = bench("--type q4_0,q5_K --m 16 --k 256 --n 1 --warm --format csv");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.output;
  EXPECT_EQ(lines[0], "type,m,k,n,path,threads,us,gflops,weight_gbps,roof_frac");
  EXPECT_EQ(lines[1].rfind("q4_0,16,256,1,auto,", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("q5_K,16,256,1,auto,", 0), 0u) << lines[2];
  for (const auto& line : lines) EXPECT_EQ(count_of(line, ','), std::size(kColumns) - 1) << line;
}

TEST(BenchText, MarkdownIsATableAfterTheMachineLine) {
  const ToolRun r = bench("--type q8_0 --m 16 --k 64 --n 1,2 --warm --format md");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 6u) << r.output;
  EXPECT_EQ(lines[0].rfind("machine: ", 0), 0u);
  EXPECT_EQ(lines[2], "| type | m | k | n | path | threads | us | gflops | weight_gbps | roof_frac |");
  EXPECT_EQ(lines[3], "|:---|---:|---:|---:|:---|---:|---:|---:|---:|---:|");
  for (size_t i = 2; i < lines.size(); ++i) EXPECT_EQ(count_of(lines[i], '|'), std::size(kColumns) + 1) << lines[i];
  EXPECT_EQ(lines[4].rfind("| q8_0 | 16 | 64 | 1 | auto |", 0), 0u) << lines[4];
}

TEST(BenchText, TableAndMarkdownEndWithTheDenseCache) {
  for (const char* format : {"table", "md"}) {
    const ToolRun r = bench(std::string("--type q8_0 --m 16 --k 64 --n 8 --warm --path dense --format ") + format);
    ASSERT_EQ(r.status, 0) << r.output;
    const auto lines = lines_of(r.out);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back().rfind("dense cache: ", 0), 0u) << format << ": " << lines.back();
    EXPECT_NE(lines.back().find(" 1 misses, 0 evictions; 1 copies holding "), std::string::npos) << lines.back();
  }
}

TEST(BenchText, TableAlignsItsColumns) {
  const ToolRun r = bench("--type q4_0,iq4_nl --m 16,1024 --k 64 --n 1 --warm");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 7u) << r.output;
  EXPECT_EQ(lines[0].rfind("machine: ", 0), 0u);
  EXPECT_EQ(lines[2].rfind("type    ", 0), 0u) << lines[2];
  // Right-aligned numbers: every row's "us" column ends where its header does.
  const size_t us_end = lines[2].find(" us") + 3;
  for (size_t i = 3; i < lines.size(); ++i) EXPECT_EQ(lines[i][us_end], ' ') << lines[i];
}

// Off a terminal, progress comes as plain lines on stderr, one per case, and each row as soon as its case is timed:
// the first case's row precedes the second case's progress line.
TEST(BenchText, OffATerminalProgressIsALinePerCaseAndRowsComeAsTheyFinish) {
  const std::string args = "--type q4_0,q8_0 --m 16 --k 64 --n 1 --warm --threads 1 --format csv";
  const ToolRun r = bench(args);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string errors = r.output.substr(r.out.size());
  EXPECT_EQ(errors.find('\r'), std::string::npos) << errors;
  EXPECT_EQ(errors.find('\033'), std::string::npos) << errors;
  for (const char* line : {"[1/2] q4_0 16x64 n=1 auto\n", "[2/2] q8_0 16x64 n=1 auto\n"}) {
    EXPECT_NE(errors.find(line), std::string::npos) << line << " in\n" << errors;
  }
  const std::string both = test::run_tool_interleaved("bench --quick-limits " + args);
  const size_t first_row = both.find("\nq4_0,16,64,1,auto,"), second_case = both.find("[2/2] q8_0");
  ASSERT_NE(first_row, std::string::npos) << both;
  ASSERT_NE(second_case, std::string::npos) << both;
  EXPECT_LT(first_row, second_case) << both;
}

TEST(BenchUsage, MistakesExitWith2AndSaySo) {
  const std::pair<const char*, const char*> cases[] = {
      {"--type q4_0,warp9", "unknown --type warp9"},
      {"--type i32", "not a weight format"},
      {"--type ''", "--type: empty list"},
      {"--n 1,,2", "--n: empty item"},
      {"--m 0", "'0' is not a positive integer"},
      {"--k 100 --type q4_K", "--k 100 is not a multiple of the q4_K block size 256"},
      {"--path warp", "unknown --path warp"},
      {"--format xml", "xml"},
      {"--cold --warm", "excludes"},
      {"--moe model.gguf", "excludes"},
      {"--moe --path tiled", "--path tiled does not apply"},
  };
  for (const auto& [args, message] : cases) {
    const ToolRun r = bench(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << ": " << r.output;
  }
}

}  // namespace
}  // namespace ggufmm
