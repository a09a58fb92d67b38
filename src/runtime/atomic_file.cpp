#include "runtime/atomic_file.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "ggufmm/types.hpp"

namespace ggufmm::runtime {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxLinks = 40;  // as many as the kernel follows in one lookup

[[noreturn]] void fail_with(const std::string& path, const char* what, int err) {
  throw Error(Error::Kind::BadInput, fmt::format("{}: {}: {}", path, what, std::strerror(err)));
}

// The name a chain of symbolic links ends at: `path` itself where it is not a link, and the name the last link
// gives where that is dangling.
std::string follow_links(const std::string& path) {
  fs::path at = path;
  for (int hops = 0; hops < kMaxLinks; ++hops) {
    std::error_code error;
    if (!fs::is_symlink(fs::symlink_status(at, error))) return at.string();
    const fs::path target = fs::read_symlink(at, error);
    if (error) fail_with(path, "cannot read the link", error.value());
    at = target.is_absolute() ? target : at.parent_path() / target;
  }
  fail_with(path, "cannot follow", ELOOP);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_ == "-") {
    std::fflush(stdout);  // what the program printed before goes first
    fd_ = STDOUT_FILENO;
    owns_fd_ = false;
    return;
  }
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {  // follows every link, the kernel's /proc/self/fd ones included
    if (errno != ENOENT) fail_with(path_, "cannot write", errno);
    open_temporary(follow_links(path_));  // a new path, or a dangling link's target
    return;
  }
  if (S_ISDIR(st.st_mode)) throw Error(Error::Kind::BadInput, fmt::format("{}: is a directory", path_));
  if (S_ISSOCK(st.st_mode)) {
    connect_socket();
    return;
  }
  if (S_ISREG(st.st_mode)) {
    // Renamed over only by a name that reaches this very file: a /proc/self/fd link to a deleted file has none.
    const std::string target = follow_links(path_);
    struct stat at {};
    if (::stat(target.c_str(), &at) == 0 && at.st_dev == st.st_dev && at.st_ino == st.st_ino) {
      open_temporary(target);
      return;
    }
  }
  open_in_place();
}

AtomicFile::~AtomicFile() {
  if (fd_ < 0 || !owns_fd_) return;
  ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::open_temporary(const std::string& target) {
  target_ = target;
  temp_ = fmt::format("{}.tmp.{}", target_, ::getpid());
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail_with(path_, "cannot create", errno);
}

void AtomicFile::open_in_place() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);  // waits for a FIFO's reader, as a shell does
  if (fd_ < 0) fail_with(path_, "cannot open", errno);
}

void AtomicFile::connect_socket() {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path_.size() >= sizeof(address.sun_path)) fail_with(path_, "cannot connect", ENAMETOOLONG);
  std::memcpy(address.sun_path, path_.c_str(), path_.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) fail_with(path_, "cannot make a socket", errno);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) fail("cannot connect");
}

void AtomicFile::fail(const char* what) {
  const int err = errno;
  if (owns_fd_ && fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  fail_with(path_, what, err);
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
  if (!owns_fd_) {
    fd_ = -1;
    return;
  }
  if (!temp_.empty() && ::fsync(fd_) != 0) fail("cannot flush");
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) fail("cannot close");
  if (temp_.empty()) return;
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail("cannot rename into place");
}

}  // namespace ggufmm::runtime
