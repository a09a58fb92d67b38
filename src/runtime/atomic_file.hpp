// An output file that appears whole or not at all: written to a temporary name beside the target, renamed
// into place by commit(), removed if destroyed before that.
#pragma once

#include <cstddef>
#include <string>

namespace ggufmm::runtime {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // throws Error(BadInput) naming the path
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* bytes, size_t size);
  void commit();

 private:
  [[noreturn]] void fail(const char* what);

  std::string path_;
  std::string temp_;
  int fd_ = -1;
};

}  // namespace ggufmm::runtime
