#include "runtime/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>

#include "ggufmm/types.hpp"

namespace ggufmm::runtime {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  temp_ = fmt::format("{}.tmp.{}", path_, ::getpid());
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw Error(Error::Kind::BadInput, fmt::format("{}: cannot create: {}", path_, std::strerror(errno)));
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFile::fail(const char* what) {
  const int err = errno;
  ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  throw Error(Error::Kind::BadInput, fmt::format("{}: {}: {}", path_, what, std::strerror(err)));
}

void AtomicFile::write(const void* bytes, size_t size) {
  const auto* p = static_cast<const uint8_t*>(bytes);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write failed");
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("cannot flush");
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(temp_.c_str());
    throw Error(Error::Kind::BadInput, fmt::format("{}: cannot close: {}", path_, std::strerror(errno)));
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_.c_str());
    throw Error(Error::Kind::BadInput, fmt::format("{}: cannot rename into place: {}", path_, std::strerror(err)));
  }
}

}  // namespace ggufmm::runtime
