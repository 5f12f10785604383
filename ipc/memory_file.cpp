#include "ipc/memory_file.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

#include <sys/mman.h>
#include <unistd.h>

#include "actorgraph/error.hpp"

namespace ag {

memory_file memory_file::create(const std::string& label) {
  const int fd = ::memfd_create(label.c_str(), MFD_CLOEXEC);
  if (fd < 0)
    throw error("in-memory file " + label + ": " + std::strerror(errno));
  memory_file f;
  f.fd_ = fd;
  f.path_ = "/proc/self/fd/" + std::to_string(fd);
  return f;
}

memory_file::memory_file(memory_file&& other) noexcept
  : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

memory_file& memory_file::operator=(memory_file&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

memory_file::~memory_file() {
  if (fd_ >= 0)
    ::close(fd_);
}

} // namespace ag
