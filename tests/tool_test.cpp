// The ggufmm tool as a user runs it: exit statuses, messages, and output files written whole or not at all.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
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

TEST_F(Tool, AnUnknownSubcommandIsNamedWithTheKnownOnes) {
  const ToolRun r = run_tool("bogus");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown subcommand 'bogus'; the subcommands are info, devices, dequant, quantize, matmul, "
                          "moe, check, bench, calibrate"),
            std::string::npos)
      << r.output;
}

TEST_F(Tool, VersionIsTheProjects) {
  const ToolRun r = run_tool("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "ggufmm " GGUFMM_VERSION "\n");
}

TEST_F(Tool, ANegativeThreadCountGetsAShortBound) {
  const ToolRun r = run_tool(fmt::format("matmul x.gguf --weight w --act a --threads -1 -o {}", out("y.f32")));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--threads: '-1' is not a thread count: 0 (all cores) or more"), std::string::npos)
      << r.output;
  EXPECT_LT(r.output.size(), 200u) << r.output;
}

TEST_F(Tool, DevicesHelpNamesEveryKind) {
  const ToolRun r = run_tool("devices --help");
  EXPECT_EQ(r.status, 0);
  for (const char* kind : {"cpu", "cuda:N", "opencl:N"}) EXPECT_NE(r.out.find(kind), std::string::npos) << r.out;
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

// Shapes that do not fit are said in words: which tensor has which shape, and what the use needs.
TEST_F(Tool, AWrongShapeSaysWhatItIsAndWhatIsNeeded) {
  GGUFMM_GOLDEN_PATH(path, "q4_0.gguf");
  const ToolRun act = run_tool(fmt::format("matmul {} --weight weight --act ggml_out.8 -o {}", path, out("y.f32")));
  EXPECT_EQ(act.status, 1);
  EXPECT_NE(act.output.find(fmt::format("{}: tensor ggml_out.8 is [48, 8], but activations for weight weight [768, "
                                        "48] must be [768, n]: n rows of 768 values, as long as the weight's rows",
                                        path)),
            std::string::npos)
      << act.output;
  const ToolRun residual =
      run_tool(fmt::format("matmul {} --weight weight --act act.3 --residual act.3 -o {}", path, out("y.f32")));
  EXPECT_EQ(residual.status, 1);
  EXPECT_NE(residual.output.find("tensor act.3 is [768, 3], but the residual must be [48, 3]: for each of the 3 "
                                 "activation rows, one value per output of weight weight [768, 48]"),
            std::string::npos)
      << residual.output;

  GGUFMM_GOLDEN_PATH(moe, "moe-q4_K-perslot.gguf");
  const auto file = gguf::File::open(moe);
  const auto& w = file.tensor("weight").shape;
  const auto& ids = file.tensor("ids").shape;
  const ToolRun experts =
      run_tool(fmt::format("moe {} --weight weight --act exact_out --ids ids -o {}", moe, out("y.f32")));
  EXPECT_EQ(experts.status, 1);
  const std::string want =
      fmt::format("tensor exact_out is [{}], but activations for experts weight [{}] with ids ids [{}] must be [{}, 1 "
                  "or {}, {}]: for each of the {} tokens, one row of {} values shared by its {} slots or one per slot",
                  fmt::join(file.tensor("exact_out").shape, ", "), fmt::join(w, ", "), fmt::join(ids, ", "), w[0],
                  ids[0], ids[1], ids[1], w[0], ids[0]);
  EXPECT_NE(experts.output.find(want), std::string::npos) << experts.output << "\nwanted: " << want;
}

// --act FILE:NAME: a missing FILE is said; a FILE whose path holds ':' is found (the longest existing prefix).
TEST_F(Tool, ActivationsFromAnotherFileAreFoundOrTheFileIsSaidMissing) {
  GGUFMM_GOLDEN_PATH(path, "q6_K.gguf");
  const ToolRun missing =
      run_tool(fmt::format("matmul {} --weight weight --act {}:act.3 -o {}", path, out("nope.gguf"), out("y.f32")));
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find(fmt::format("{}:act.3: no such file as {}", out("nope.gguf"), out("nope.gguf"))),
            std::string::npos)
      << missing.output;

  fs::create_directory(out("a:b"));
  const std::string other = out("a:b/x:y.gguf");
  fs::copy_file(path, other);
  const ToolRun colons =
      run_tool(fmt::format("matmul {} --weight weight --act {}:act.3 --path ref -o {}", path, other, out("y.f32")));
  ASSERT_EQ(colons.status, 0) << colons.output;
  const std::vector<float> exact = gguf::File::open(path).read_f32("exact_out.3");
  const std::vector<float> y = read_raw_f32(out("y.f32"));
  ASSERT_EQ(y.size(), exact.size());
  EXPECT_LE(nmse(y.data(), exact.data(), y.size()), 1e-10);
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

// --- where -o writes ----------------------------------------------------------------------------------------------

// What `dequant q5_K.gguf weight` writes: the golden dequantized values, as raw bytes.
class ToolOutput : public Tool {
 protected:
  void SetUp() override {
    GGUFMM_GOLDEN_PATH(path, "q5_K.gguf");
    golden_ = path;
    const std::vector<float> values = gguf::File::open(path).read_f32("dequant");
    want_.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  }
  ToolRun dequant_to(const std::string& target) const {
    return run_tool(fmt::format("dequant {} weight -o {}", golden_, target));
  }
  static std::string contents(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  std::string golden_, want_;
};

// Whatever a reader got from `fd` until its writer closed it, or until nothing came for 20 s.
std::string read_until_closed(int fd) {
  std::string got;
  pollfd ready{.fd = fd, .events = POLLIN, .revents = 0};
  while (::poll(&ready, 1, 20000) > 0) {
    char buffer[65536];
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
    if (n > 0) got.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return got;
}

TEST_F(ToolOutput, ANewPathOrARegularFileIsWrittenWhole) {
  ASSERT_EQ(dequant_to(out("new.f32")).status, 0);
  EXPECT_EQ(contents(out("new.f32")), want_);
  std::ofstream(out("old.f32")) << "old";
  ASSERT_EQ(dequant_to(out("old.f32")).status, 0);
  EXPECT_EQ(contents(out("old.f32")), want_);
  EXPECT_EQ(dir_.entries().size(), 2u);  // no temporary left
}

TEST_F(ToolOutput, ASymlinkIsFollowedToItsFile) {
  std::ofstream(out("real.f32")) << "old";
  fs::create_symlink("real.f32", out("link"));  // relative, to the link's directory
  ASSERT_EQ(dequant_to(out("link")).status, 0);
  EXPECT_TRUE(fs::is_symlink(out("link")));
  EXPECT_EQ(contents(out("real.f32")), want_);
  EXPECT_EQ(dir_.entries().size(), 2u);
}

TEST_F(ToolOutput, ADanglingSymlinkMakesItsTarget) {
  fs::create_directory(out("sub"));
  fs::create_symlink("sub/made.f32", out("first"));
  fs::create_symlink(out("first"), out("second"));  // a chain: second -> first -> sub/made.f32
  ASSERT_EQ(dequant_to(out("second")).status, 0);
  EXPECT_TRUE(fs::is_symlink(out("first")));
  EXPECT_TRUE(fs::is_symlink(out("second")));
  EXPECT_EQ(contents(out("sub/made.f32")), want_);
}

TEST_F(ToolOutput, ADirectoryIsAClearError) {
  fs::create_directory(out("d"));
  const ToolRun r = dequant_to(out("d"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find(out("d") + ": is a directory"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::is_empty(out("d")));
}

TEST_F(ToolOutput, DashIsStandardOutput) {
  const ToolRun r = dequant_to("-");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.out, want_);
  EXPECT_FALSE(fs::exists("-"));

  // Every command that writes a file takes it: a GGUF file, a profile (its table then goes to stderr).
  GGUFMM_GOLDEN_PATH(f32, "f32.gguf");
  const ToolRun quantized = run_tool(fmt::format("quantize {} - --type q8_0 --tensor source", f32));
  ASSERT_EQ(quantized.status, 0) << quantized.output;
  const std::vector<uint8_t> image(quantized.out.begin(), quantized.out.end());
  EXPECT_EQ(gguf::File::parse(image, "stdout").tensor("source").type, Type::Q8_0);
  const ToolRun profile = run_tool("calibrate --type q4_0 --quick --threads 1 -o -");
  ASSERT_EQ(profile.status, 0) << profile.output;
  std::ofstream(out("profile.json"), std::ios::binary) << profile.out;
  EXPECT_EQ(read_profile(out("profile.json")).crossovers.size(), 2u) << profile.out;
}

// A character device is written, never replaced: first a copy of /dev/null made in the test's directory (root
// only), so that a broken build fails there before it could replace the real one.
TEST_F(ToolOutput, ACharacterDeviceIsWrittenInPlace) {
  if (::mknod(out("null").c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) {
    ASSERT_EQ(dequant_to(out("null")).status, 0);
    ASSERT_TRUE(fs::is_character_file(out("null"))) << "replaced a device";
  } else if (::geteuid() == 0) {
    FAIL() << "mknod as root: " << std::strerror(errno);
  }
  const ToolRun r = dequant_to("/dev/null");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  if (::geteuid() != 0) GTEST_SKIP() << "ran /dev/null only: a device of the test's own needs root (mknod)";
}

// /dev/stdout, when standard output is a pipe, names the pipe (through /proc/self/fd/1): the bytes go down it. A
// link of the test's own to /proc/self/fd/1 first, so that a broken build fails there before it could replace
// /dev/stdout.
TEST_F(ToolOutput, StandardOutputAsAPipeIsWrittenInPlace) {
  if (!fs::exists("/proc/self/fd/1")) GTEST_SKIP() << "needs /proc";
  fs::create_symlink("/proc/self/fd/1", out("stdout"));
  const ToolRun own = dequant_to(out("stdout"));
  ASSERT_EQ(own.status, 0) << own.output;
  ASSERT_TRUE(fs::is_symlink(out("stdout"))) << "replaced the link";
  EXPECT_EQ(own.out, want_);
  const ToolRun r = dequant_to("/dev/stdout");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink("/dev/stdout"));
  EXPECT_EQ(r.out, want_);
}

TEST_F(ToolOutput, AFifoIsWrittenToItsReader) {
  ASSERT_EQ(::mkfifo(out("fifo").c_str(), 0600), 0) << std::strerror(errno);
  // Open before the tool runs, so that it finds a reader; read while it writes, as the pipe holds 64 KiB.
  const int reader = ::open(out("fifo").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0) << std::strerror(errno);
  std::future<std::string> got = std::async(std::launch::async, read_until_closed, reader);
  const ToolRun r = dequant_to(out("fifo"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(got.get(), want_);
  EXPECT_EQ(fs::status(out("fifo")).type(), fs::file_type::fifo);
  EXPECT_EQ(dir_.entries().size(), 1u);
}

TEST_F(ToolOutput, AUnixSocketIsConnectedToAndWritten) {
  const int listener = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string path = out("socket");
  ASSERT_LT(path.size(), sizeof(address.sun_path));
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(listener, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0) << std::strerror(errno);
  ASSERT_EQ(::listen(listener, 1), 0);
  std::future<std::string> got = std::async(std::launch::async, [listener] {
    pollfd ready{.fd = listener, .events = POLLIN, .revents = 0};
    const int connection = ::poll(&ready, 1, 20000) > 0 ? ::accept(listener, nullptr, nullptr) : -1;
    ::close(listener);
    return connection < 0 ? std::string() : read_until_closed(connection);
  });
  const ToolRun r = dequant_to(path);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(got.get(), want_);
  EXPECT_EQ(fs::status(path).type(), fs::file_type::socket);
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
