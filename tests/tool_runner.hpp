// Runs the ggufmm tool as a user would, capturing what it prints: the one built beside the tests (GGUFMM_TOOL_PATH),
// or $GGUFMM_TEST_TOOL where the two were moved from their build (scripts/gpu-check --prebuilt).
#pragma once

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace ggufmm::test {

// Not named Run: inside a test body, that name is gtest's Test::Run.
struct ToolRun {
  int status;
  std::string output;  // stdout, then stderr
  std::string out;     // stdout alone
};

// A shell command's exit status and what it wrote on stdout.
inline ToolRun capture(const std::string& command) {
  ToolRun run{-1, {}, {}};
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    std::array<char, 4096> buffer;
    while (const size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) run.out.append(buffer.data(), n);
    const int raw = ::pclose(pipe);
    run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  }
  return run;
}

inline const char* tool_path() {
  const char* moved = std::getenv("GGUFMM_TEST_TOOL");
  return moved && *moved ? moved : GGUFMM_TOOL_PATH;
}

// `env`: variable assignments for the tool's environment ("NAME=value ...").
inline ToolRun run_tool(const std::string& args, const std::string& env = "") {
  std::string errors = (std::filesystem::temp_directory_path() / "ggufmm-tool-stderr-XXXXXX").string();
  const int errors_fd = ::mkstemp(errors.data());
  if (errors_fd < 0) return {-1, "mkstemp failed", ""};
  ::close(errors_fd);
  ToolRun run = capture(fmt::format("{} {} {} 2>{}", env, tool_path(), args, errors));
  std::ifstream in(errors, std::ios::binary);
  run.output = run.out + std::string(std::istreambuf_iterator<char>(in), {});
  std::remove(errors.c_str());
  return run;
}

// stdout and stderr as one stream, in the order the tool wrote them.
inline std::string run_tool_interleaved(const std::string& args) {
  return capture(fmt::format("{} {} 2>&1", tool_path(), args)).out;
}

}  // namespace ggufmm::test
