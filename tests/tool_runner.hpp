// Runs the built ggufmm tool (GGUFMM_TOOL_PATH) as a user would, capturing what it prints.
#pragma once

#include <fmt/format.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace ggufmm::test {

// Not named Run: inside a test body, that name is gtest's Test::Run.
struct ToolRun {
  int status;
  std::string output;  // stdout and stderr
};

// `env`: variable assignments for the tool's environment ("NAME=value ...").
inline ToolRun run_tool(const std::string& args, const std::string& env = "") {
  const std::string command = fmt::format("{} {} {} 2>&1", env, GGUFMM_TOOL_PATH, args);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  ToolRun run{0, {}};
  std::array<char, 4096> buffer;
  while (const size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) run.output.append(buffer.data(), n);
  const int raw = ::pclose(pipe);
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return run;
}

}  // namespace ggufmm::test
