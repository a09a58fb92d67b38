// The ggufmm tool as a user runs it: exit statuses, messages, and output files written whole or not at all.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>

#include "ggufmm/gguf.hpp"
#include "ggufmm/ggufmm.hpp"
#include "temp_dir.hpp"
#include "test_support.hpp"
#include "tool_runner.hpp"

namespace ggufmm {
namespace {

namespace fs = std::filesystem;

using test::ToolRun;
using test::run_tool;

std::vector<float> read_raw_f32(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v(fs::file_size(path) / sizeof(float));
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

class Tool : public ::testing::Test {
 protected:
  std::string out(const std::string& name) const { return dir_.file(name); }
  test::TempDir dir_;
};

TEST_F(Tool, UsageErrorsExitWith2) {
  EXPECT_EQ(run_tool("").status, 2);
  EXPECT_EQ(run_tool("frobnicate").status, 2);
  EXPECT_EQ(run_tool("matmul").status, 2);
  const ToolRun bad_path = run_tool(fmt::format("matmul x.gguf --weight w --act a --path warp -o {}", out("y.f32")));
  EXPECT_EQ(bad_path.status, 2);
  EXPECT_NE(bad_path.output.find("unknown --path warp"), std::string::npos) << bad_path.output;
  EXPECT_EQ(run_tool("quantize a.gguf b.gguf --type iq2_xs").status, 2);
  EXPECT_EQ(run_tool("--help").status, 0);
}

TEST_F(Tool, MissingOrBrokenFileExitsWith1NamingIt) {
  const ToolRun missing = run_tool(out("nope.gguf").insert(0, "info "));
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("nope.gguf"), std::string::npos) << missing.output;

  std::ofstream(out("junk.gguf")) << "this is not a gguf file at all";
  const ToolRun junk = run_tool("info " + out("junk.gguf"));
  EXPECT_EQ(junk.status, 1);
  EXPECT_NE(junk.output.find("junk.gguf"), std::string::npos) << junk.output;
}

TEST_F(Tool, InfoListsTensors) {
  GGUFMM_GOLDEN_PATH(path, "q4_K.gguf");
  const ToolRun r = run_tool("info " + path);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("golden.kind"), std::string::npos);
  EXPECT_NE(r.output.find("weight"), std::string::npos);
  EXPECT_NE(r.output.find("q4_K"), std::string::npos);
  EXPECT_NE(r.output.find("[768, 48]"), std::string::npos) << r.output;
}

TEST_F(Tool, DequantWritesGgmlValues) {
  GGUFMM_GOLDEN_PATH(path, "q5_K.gguf");
  ASSERT_EQ(run_tool(fmt::format("dequant {} weight -o {}", path, out("w.f32"))).status, 0);
  const auto file = gguf::File::open(path);
  const std::vector<float> want = file.read_f32("dequant");
  const std::vector<float> got = read_raw_f32(out("w.f32"));
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);

  const ToolRun missing = run_tool(fmt::format("dequant {} no_such_tensor -o {}", path, out("x.f32")));
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("no_such_tensor"), std::string::npos) << missing.output;
  EXPECT_FALSE(fs::exists(out("x.f32")));
}

TEST_F(Tool, MatmulMatchesExactAndAddsResidual) {
  GGUFMM_GOLDEN_PATH(path, "q6_K.gguf");
  const auto file = gguf::File::open(path);
  const std::vector<float> exact = file.read_f32("exact_out.3");
  ASSERT_EQ(run_tool(fmt::format("matmul {} --weight weight --act act.3 --path ref --threads 1 -o {}", path, out("y.f32"))).status,
            0);
  std::vector<float> y = read_raw_f32(out("y.f32"));
  ASSERT_EQ(y.size(), exact.size());
  EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 1e-10);

  // The exact output itself as the residual doubles the result.
  ASSERT_EQ(run_tool(fmt::format("matmul {} --weight weight --act {}:act.3 --residual exact_out.3 --path ref -o {}", path, path,
                                 out("y2.f32")))
                .status,
            0);
  const std::vector<float> y2 = read_raw_f32(out("y2.f32"));
  EXPECT_LE(nmse(y2.data(), test::doubled(exact).data(), y2.size()), 1e-10);
}

TEST_F(Tool, FailedMatmulLeavesNoOutput) {
  GGUFMM_GOLDEN_PATH(path, "q4_0.gguf");
  std::ofstream(out("keep.f32")) << "old";
  // ggml_out.3 is [48, 3]: wrong shape for activations of a [768, 48] weight.
  const ToolRun r = run_tool(fmt::format("matmul {} --weight weight --act ggml_out.3 -o {}", path, out("keep.f32")));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("ggml_out.3"), std::string::npos) << r.output;
  std::ifstream in(out("keep.f32"));
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_.path()), fs::directory_iterator{}), 1);  // no temporary left
}

TEST_F(Tool, MoeMatchesExact) {
  GGUFMM_GOLDEN_PATH(path, "moe-q4_K-perslot.gguf");
  ASSERT_EQ(run_tool(fmt::format("moe {} --weight weight --act act --ids ids --path ref -o {}", path, out("y.f32"))).status, 0);
  const std::vector<float> exact = gguf::File::open(path).read_f32("exact_out");
  const std::vector<float> y = read_raw_f32(out("y.f32"));
  ASSERT_EQ(y.size(), exact.size());
  EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 1e-10);
  const ToolRun wrong = run_tool(fmt::format("moe {} --weight weight --act act --ids act -o {}", path, out("z.f32")));
  EXPECT_EQ(wrong.status, 1);
  EXPECT_NE(wrong.output.find("expert ids must be i32"), std::string::npos) << wrong.output;
}

TEST_F(Tool, QuantizeConvertsFloatTensorsAndCopiesTheRest) {
  GGUFMM_GOLDEN_PATH(path, "f32.gguf");
  const ToolRun r = run_tool(fmt::format("quantize {} {} --type q8_0 --tensor source", path, out("q.gguf")));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto in = gguf::File::open(path);
  const auto q = gguf::File::open(out("q.gguf"));
  EXPECT_EQ(q.metadata().size(), in.metadata().size());
  ASSERT_EQ(q.tensors().size(), in.tensors().size());
  EXPECT_EQ(q.tensor("source").type, Type::Q8_0);
  EXPECT_EQ(q.tensor("source").shape, in.tensor("source").shape);
  EXPECT_EQ(q.tensor("act.1").type, Type::F32);
  EXPECT_EQ(std::memcmp(q.tensor("act.1").data, in.tensor("act.1").data, in.tensor("act.1").bytes), 0);
  const std::vector<float> source = in.read_f32("source");
  const std::vector<float> back = dequantize(q.weight("source"));
  EXPECT_LE(nmse(back.data(), source.data(), source.size()), 1e-4);

  const ToolRun all = run_tool(fmt::format("quantize {} {} --type q4_K", path, out("all.gguf")));
  ASSERT_EQ(all.status, 0) << all.output;
  // Rows of 48 values (the outputs) cannot hold 256-value blocks: kept as f32, with a note.
  const auto all_q = gguf::File::open(out("all.gguf"));
  EXPECT_EQ(all_q.tensor("source").type, Type::Q4_K);
  EXPECT_EQ(all_q.tensor("act.8").type, Type::Q4_K);
  EXPECT_EQ(all_q.tensor("exact_out.8").type, Type::F32);
  EXPECT_NE(all.output.find("tensor exact_out.8: row length 48 is not a multiple of the q4_K block size 256; kept as f32"),
            std::string::npos)
      << all.output;
  const ToolRun named = run_tool(fmt::format("quantize {} {} --type q4_K --tensor exact_out.8", path, out("n.gguf")));
  EXPECT_EQ(named.status, 1);
  EXPECT_FALSE(fs::exists(out("n.gguf")));
}

TEST_F(Tool, ABadSettingInTheEnvironmentIsAUsageError) {
  const ToolRun r = run_tool("check", "GGUFMM_SPIN_US=soon");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("GGUFMM_SPIN_US=soon"), std::string::npos) << r.output;
}

TEST_F(Tool, CheckReportsAllPassed) {
  const ToolRun r = run_tool("check");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("all passed"), std::string::npos);
}

}  // namespace
}  // namespace ggufmm
