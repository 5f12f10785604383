#include "ipc/runtime_dir.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <dirent.h>
#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/leftovers.hpp"

namespace ag {

runtime_dir runtime_dir::create() {
  // The pid in the name lets a later runtime tell a dead runtime's directory from a live one's.
  std::string templ = tmp_dir() + "/ag-" + std::to_string(::getpid()) + "-XXXXXX";
  // A unix socket path holds at most 107 bytes; the longest endpoint name here is "pull".
  if (templ.size() + 5 > 107)
    throw error("runtime directory " + templ + ": too long for socket paths (at most 102 bytes); "
                "set TMPDIR to a shorter directory");
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  // mkdtemp creates the directory with mode 0700.
  if (::mkdtemp(buf.data()) == nullptr)
    throw error("runtime directory " + templ + ": " + std::strerror(errno));
  return runtime_dir{std::string{buf.data()}};
}

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
  // Only socket files live here, one level deep.
  if (DIR* d = ::opendir(path_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        ::unlink((path_ + "/" + e->d_name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(path_.c_str());
}

} // namespace ag
