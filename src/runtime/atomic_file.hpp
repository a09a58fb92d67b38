// An output file, written as what its path names allows. "-" is standard output. A symbolic link is followed to
// what it names, dangling or not. A regular file or a new path is written to a temporary name beside it and renamed
// into place by commit(), so that it appears whole or not at all (the temporary is removed if destroyed before).
// A character or block device or a FIFO is opened and written as it is, a Unix socket connected to and written:
// those cannot be replaced, and their reader waits for the bytes. A directory is an error.
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
  void open_temporary(const std::string& target);
  void open_in_place();
  void connect_socket();

  std::string path_;    // as given, for messages
  std::string target_;  // what commit() renames the temporary to; empty where written in place
  std::string temp_;
  int fd_ = -1;
  bool owns_fd_ = true;  // false for standard output
};

}  // namespace ggufmm::runtime
