// A temporary directory of its own for each use, removed with everything in it. ctest runs tests as separate
// processes in parallel, so the name carries the process id as well as a per-process counter.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace ggufmm::test {

class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() / fmt::format("ggufmm-test-{}-{}", ::getpid(), counter++);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) names.push_back(entry.path().filename().string());
    return names;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace ggufmm::test
