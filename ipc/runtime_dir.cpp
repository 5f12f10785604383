#include "ipc/runtime_dir.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/leftovers.hpp"

namespace ag {

namespace {

std::string random_tag() {
  std::random_device rd;
  const uint64_t x = (uint64_t{rd()} << 32) | rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

} // namespace

std::string runtime_name() {
  return "ag-" + std::to_string(::getpid()) + "-actorgraph-" + random_tag();
}

namespace {

void write_marker(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw error("runtime directory owner marker " + path + ": cannot create: "
                + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      const int saved = n < 0 ? errno : EIO;
      ::close(fd);
      throw error("runtime directory owner marker " + path + ": cannot write: "
                  + std::strerror(saved));
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

} // namespace

runtime_dir runtime_dir::create() {
  // The marker records who made the directory, so that a later runtime removes it (and the shared
  // memory named after it) only once this process is provably gone, and nothing that merely looks
  // like it.
  const auto self = identity_of(::getpid());
  if (!self)
    throw error("runtime directory: cannot read this process's start time from /proc/"
                + std::to_string(::getpid()) + "/stat");
  const std::string base = tmp_dir() + "/ag-" + std::to_string(::getpid()) + "-actorgraph-";
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::string path = base + random_tag();
    // A unix socket path holds at most 107 bytes; the longest endpoint name here is "pull".
    if (path.size() + 5 > 107)
      throw error("runtime directory " + path + ": too long for socket paths (at most 102 bytes); "
                  "set TMPDIR to a shorter directory");
    if (::mkdir(path.c_str(), 0700) != 0) {
      if (errno == EEXIST)
        continue;
      throw error("runtime directory " + path + ": " + std::strerror(errno));
    }
    runtime_dir dir{path}; // removed again if the marker cannot be written
    write_marker(dir.marker_path(), owner_marker_text(*self));
    return dir;
  }
  throw error("runtime directory " + base + "<tag>: eight random names in a row already exist");
}

std::string runtime_dir::marker_path() const { return path_ + "/" + owner_marker_file; }

runtime_dir& runtime_dir::operator=(runtime_dir&& other) noexcept {
  if (this != &other) {
    this->~runtime_dir();
    new (this) runtime_dir(std::move(other));
  }
  return *this;
}

runtime_dir::~runtime_dir() {
  if (path_.empty())
    return;
  // Only socket files, timeline parts and the marker live here, one level deep. unlink removes a
  // symlink itself, never what it points to.
  if (DIR* d = ::opendir(path_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0
          && std::strcmp(e->d_name, owner_marker_file) != 0)
        ::unlink((path_ + "/" + e->d_name).c_str());
    }
    ::closedir(d);
  } else { // no descriptor left to list it (EMFILE): what a runtime puts there, by name
    for (const char* name : {"pub", "pull", "trusted.pem"})
      ::unlink((path_ + "/" + name).c_str());
    for (int lane = 0; lane < 256; ++lane)
      ::unlink((path_ + "/timeline-" + std::to_string(lane)).c_str());
  }
  // The marker last: a directory whose removal stopped short stays recognisable.
  ::unlink(marker_path().c_str());
  ::rmdir(path_.c_str());
}

} // namespace ag
