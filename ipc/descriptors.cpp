#include "ipc/descriptors.hpp"

#include <cerrno>
#include <limits>

#include <dirent.h>
#include <sys/resource.h>

#include "actorgraph/error.hpp"

namespace ag {

descriptor_use descriptors_now() {
  descriptor_use u;
  struct rlimit rl {};
  u.limit = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
              ? static_cast<std::size_t>(rl.rlim_cur)
              : std::numeric_limits<std::size_t>::max();
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.')
        ++u.open;
    ::closedir(d);
    --u.open; // the directory's own descriptor
  } else {
    u.open = u.limit; // none left even to look: as full as can be
  }
  return u;
}

void check_descriptors(std::size_t need, const std::string& what) {
  const auto u = descriptors_now();
  if (u.open <= u.limit && need <= u.limit - u.open)
    return;
  throw error(what + " needs " + std::to_string(need) + " more file descriptors, and this process "
              "has " + std::to_string(u.open) + " open of its limit of " + std::to_string(u.limit)
              + " (RLIMIT_NOFILE): raise the limit (ulimit -n, or setrlimit) or close some");
}

std::string descriptor_note(int err) {
  if (err != EMFILE && err != ENFILE)
    return {};
  if (err == ENFILE)
    return "the system's table of open files is full (fs.file-max)";
  const auto u = descriptors_now();
  return "this process has " + std::to_string(u.open) + " file descriptors open of its limit of "
         + std::to_string(u.limit) + " (RLIMIT_NOFILE): raise it (ulimit -n) or close some";
}

std::string socket_failure(const std::string& who, const std::string& endpoint,
                           const std::string& what, int err) {
  const std::string note = descriptor_note(err);
  return who + ": cannot open its socket " + endpoint + ": " + what
         + (note.empty() ? "" : "; " + note);
}

} // namespace ag
