#include "ipc/leftovers.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ag {

namespace {

bool alive(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

bool mine(const std::string& path, bool want_dir) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || st.st_uid != ::getuid())
    return false;
  return want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
}

template <class F>
void for_each_entry(const std::string& dir, F f) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr)
    return;
  while (dirent* e = ::readdir(d))
    f(std::string{e->d_name});
  ::closedir(d);
}

} // namespace

long owner_pid(const std::string& name) noexcept {
  if (name.rfind("ag-", 0) != 0)
    return 0;
  std::size_t i = 3;
  long pid = 0;
  while (i < name.size() && i < 13 && name[i] >= '0' && name[i] <= '9')
    pid = pid * 10 + (name[i++] - '0');
  return i > 3 && i < name.size() && name[i] == '-' ? pid : 0;
}

std::string tmp_dir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

leftovers_removed remove_leftovers(const std::string& tmp) noexcept {
  leftovers_removed out;
  try {
    for_each_entry("/dev/shm", [&](const std::string& name) {
      const long pid = owner_pid(name);
      if (pid > 0 && !alive(pid) && mine("/dev/shm/" + name, false)
          && ::shm_unlink(("/" + name).c_str()) == 0)
        ++out.shm_objects;
    });
    for_each_entry(tmp, [&](const std::string& name) {
      const long pid = owner_pid(name);
      const std::string dir = tmp + "/" + name;
      if (pid <= 0 || alive(pid) || !mine(dir, true))
        return;
      // Only the socket files a runtime puts there, one level deep.
      for_each_entry(dir, [&](const std::string& f) {
        if (f != "." && f != "..")
          ::unlink((dir + "/" + f).c_str());
      });
      if (::rmdir(dir.c_str()) == 0)
        ++out.directories;
    });
  } catch (...) {
    // Best effort: a name that vanished meanwhile or an allocation failure leaves the rest.
  }
  return out;
}

} // namespace ag
