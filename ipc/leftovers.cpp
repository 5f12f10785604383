#include "ipc/leftovers.hpp"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ag {

namespace {

constexpr std::size_t max_marker_bytes = 4096;

struct fd_guard {
  int fd = -1;
  explicit fd_guard(int f) noexcept : fd(f) {}
  fd_guard(fd_guard&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  fd_guard& operator=(fd_guard&&) = delete;
  ~fd_guard() {
    if (fd >= 0)
      ::close(fd);
  }
};

static_assert(std::is_nothrow_move_constructible_v<fd_guard>);

// The names in the directory open at `dir_fd`, without "." and "..".
std::vector<std::string> entries(int dir_fd) {
  std::vector<std::string> out;
  const int own = ::dup(dir_fd);
  if (own < 0)
    return out;
  DIR* d = ::fdopendir(own);
  if (d == nullptr) {
    ::close(own);
    return out;
  }
  ::rewinddir(d);
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

// The whole of a small file; nullopt when it cannot be read.
std::optional<std::string> read_small(const std::string& path) {
  fd_guard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0)
    return std::nullopt;
  std::string out;
  char buf[1024];
  for (;;) {
    const auto n = ::read(f.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return std::nullopt;
    if (n == 0)
      return out;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_marker_bytes)
      return std::nullopt;
  }
}

std::string boot_id() {
  auto id = read_small("/proc/sys/kernel/random/boot_id");
  if (!id)
    return {};
  while (!id->empty() && (id->back() == '\n' || id->back() == ' '))
    id->pop_back();
  return *id;
}

bool all_digits(const std::string& s, std::size_t from, std::size_t to) {
  if (from >= to || to > s.size())
    return false;
  for (std::size_t i = from; i < to; ++i)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

// A decimal number without sign or leading zeros, at most `max`.
std::optional<unsigned long long> number(const std::string& s, unsigned long long max) {
  if (s.empty() || s.size() > 19 || (s.size() > 1 && s[0] == '0') || !all_digits(s, 0, s.size()))
    return std::nullopt;
  const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
  return v <= max ? std::optional{v} : std::nullopt;
}

struct stat_fields {
  char state = '?';
  unsigned long long start_time = 0;
};

// State and start time from /proc/<pid>/stat ("pid (comm) state ppid ... starttime ..."; comm may
// hold spaces and parentheses, so fields are counted from the last ')'). nullopt with errno set
// when the file cannot be read.
std::optional<stat_fields> read_stat(long pid) {
  const auto text = read_small("/proc/" + std::to_string(pid) + "/stat");
  if (!text)
    return std::nullopt;
  const auto close = text->rfind(')');
  if (close == std::string::npos || close + 2 >= text->size()) {
    errno = EINVAL;
    return std::nullopt;
  }
  std::vector<std::string> fields; // fields[0] is the state, field 3 of the line
  std::size_t i = close + 2;
  while (i < text->size() && fields.size() < 20) {
    const auto end = text->find_first_of(" \n", i);
    fields.push_back(text->substr(i, end == std::string::npos ? std::string::npos : end - i));
    if (end == std::string::npos)
      break;
    i = end + 1;
  }
  const auto start = fields.size() == 20 ? number(fields[19], ULLONG_MAX) : std::nullopt;
  if (fields.empty() || fields[0].size() != 1 || !start) {
    errno = EINVAL;
    return std::nullopt;
  }
  return stat_fields{fields[0][0], *start};
}

bool ended(char state) { return state == 'Z' || state == 'X' || state == 'x'; }

// The marker in the directory open at `dir_fd`, if it is a regular file of `uid` that parses.
std::optional<process_identity> read_marker(int dir_fd, uid_t uid) {
  fd_guard f{::openat(dir_fd, owner_marker_file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)};
  struct stat st {};
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != uid
      || st.st_size > static_cast<off_t>(max_marker_bytes))
    return std::nullopt;
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const auto n = ::read(f.fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return std::nullopt;
    got += static_cast<std::size_t>(n);
  }
  return parse_owner_marker(text);
}

// Removes the files in a dead runtime's directory (never following a symlink), then its marker,
// then the directory. A subdirectory is not something a runtime makes: the directory is then left
// whole, marker included.
bool remove_runtime_dir(int parent_fd, const std::string& name, int dir_fd) {
  bool subdirectory = false;
  for (const auto& f : entries(dir_fd)) {
    if (f == owner_marker_file)
      continue;
    struct stat st {};
    if (::fstatat(dir_fd, f.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (S_ISDIR(st.st_mode))
      subdirectory = true;
    else
      ::unlinkat(dir_fd, f.c_str(), 0);
  }
  if (subdirectory)
    return false;
  ::unlinkat(dir_fd, owner_marker_file, 0);
  return ::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) == 0;
}

// True when `shm` is `dir`-store, `dir`-channel or `dir`-sync-<digits>.
bool belongs_to(const std::string& shm, const std::string& dir) {
  if (shm.size() <= dir.size() + 1 || shm.compare(0, dir.size(), dir) != 0 || shm[dir.size()] != '-')
    return false;
  const std::string rest = shm.substr(dir.size() + 1);
  return rest == "store" || rest == "channel" || (rest.rfind("sync-", 0) == 0 && all_digits(rest, 5, rest.size()));
}

} // namespace

std::optional<process_identity> identity_of(long pid) {
  if (pid <= 0 || pid > INT_MAX)
    return std::nullopt;
  const auto stat = read_stat(pid);
  if (!stat || ended(stat->state))
    return std::nullopt;
  return process_identity{pid, stat->start_time, boot_id()};
}

std::string owner_marker_text(const process_identity& owner) {
  return std::string{owner_marker_magic} + "\npid " + std::to_string(owner.pid) + "\nstart "
         + std::to_string(owner.start_time) + "\nboot "
         + (owner.boot_id.empty() ? std::string{"unknown"} : owner.boot_id) + "\n";
}

std::optional<process_identity> parse_owner_marker(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto nl = text.find('\n', i);
    if (nl == std::string::npos)
      return std::nullopt; // every line ends with a newline, the last one too
    lines.push_back(text.substr(i, nl - i));
    i = nl + 1;
  }
  if (lines.size() != 4 || lines[0] != owner_marker_magic || lines[1].rfind("pid ", 0) != 0
      || lines[2].rfind("start ", 0) != 0 || lines[3].rfind("boot ", 0) != 0)
    return std::nullopt;
  const auto pid = number(lines[1].substr(4), INT_MAX);
  const auto start = number(lines[2].substr(6), ULLONG_MAX);
  if (!pid || *pid == 0 || !start)
    return std::nullopt;
  std::string boot = lines[3].substr(5);
  if (boot == "unknown")
    boot.clear();
  else if (boot.empty() || boot.find_first_not_of("0123456789abcdef-") != std::string::npos)
    return std::nullopt;
  return process_identity{static_cast<long>(*pid), *start, boot};
}

bool owner_gone(const process_identity& recorded) {
  if (recorded.pid <= 0 || recorded.pid > INT_MAX)
    return false;
  if (const auto now = boot_id(); !now.empty() && !recorded.boot_id.empty() && now != recorded.boot_id)
    return true; // written before this boot: that process cannot run now
  const auto stat = read_stat(recorded.pid);
  if (!stat) {
    // No /proc entry: gone, unless /proc is not what it seems and the pid still answers.
    const int saved = errno;
    if (saved != ENOENT && saved != ESRCH)
      return false;
    return ::kill(static_cast<pid_t>(recorded.pid), 0) != 0 && errno == ESRCH;
  }
  return ended(stat->state) || stat->start_time != recorded.start_time;
}

long runtime_dir_owner(const std::string& name) noexcept {
  static constexpr const char middle[] = "-actorgraph-";
  constexpr std::size_t middle_size = sizeof middle - 1;
  constexpr std::size_t tag_size = 16;
  if (name.rfind("ag-", 0) != 0)
    return 0;
  std::size_t i = 3;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9')
    ++i;
  const std::size_t digits = i - 3;
  if (digits == 0 || digits > 10 || name[3] == '0'
      || name.size() != i + middle_size + tag_size || name.compare(i, middle_size, middle) != 0)
    return 0;
  for (std::size_t j = i + middle_size; j < name.size(); ++j)
    if (!((name[j] >= '0' && name[j] <= '9') || (name[j] >= 'a' && name[j] <= 'f')))
      return 0;
  const long long pid = std::strtoll(name.c_str() + 3, nullptr, 10);
  return pid <= INT_MAX ? static_cast<long>(pid) : 0;
}

std::string tmp_dir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

leftovers_removed remove_leftovers(const std::string& tmp) noexcept {
  leftovers_removed out;
  try {
    const uid_t me = ::geteuid();
    const fd_guard parent{::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (parent.fd < 0)
      return out;
    std::vector<std::pair<std::string, fd_guard>> dead;
    for (const auto& name : entries(parent.fd)) {
      const long pid = runtime_dir_owner(name);
      if (pid == 0)
        continue;
      // O_NOFOLLOW: a symlink with a runtime's name is not a runtime's directory.
      fd_guard dir{::openat(parent.fd, name.c_str(),
                            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)};
      struct stat st {};
      if (dir.fd < 0 || ::fstat(dir.fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != me
          || (st.st_mode & 077) != 0)
        continue;
      const auto owner = read_marker(dir.fd, me);
      if (owner && owner->pid == pid && owner_gone(*owner))
        dead.emplace_back(name, std::move(dir));
    }
    if (dead.empty())
      return out;
    // Shared memory first, the marker last: a clean-up cut short leaves a directory that the next
    // one still recognises.
    if (const fd_guard shm{::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC)}; shm.fd >= 0) {
      for (const auto& name : entries(shm.fd)) {
        bool ours = false;
        for (const auto& d : dead)
          ours = ours || belongs_to(name, d.first);
        struct stat st {};
        if (ours && ::fstatat(shm.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0
            && S_ISREG(st.st_mode) && st.st_uid == me && ::shm_unlink(("/" + name).c_str()) == 0)
          ++out.shm_objects;
      }
    }
    for (const auto& [name, dir] : dead)
      if (remove_runtime_dir(parent.fd, name, dir.fd))
        ++out.directories;
  } catch (...) {
    // Best effort: an allocation failure leaves the rest for the next runtime.
  }
  return out;
}

namespace {

// A number as the CUDA driver writes it in its files' names: lowercase hex (a pid of 643 is
// "283": seen on the H200 machine, where the children were 608, 609, 643 and 644 and the files
// cuda.shm.0.260.1, cuda.shm.0.261.1, cuda.shm.0.283.1 and cuda.shm.0.284.1).
std::string hex(unsigned long x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lx", x);
  return buf;
}

// The prefixes of this user's files: cuda.shm.<uid>. with the uid in hex (and, should a driver
// write it so, in decimal).
std::vector<std::string> user_prefixes() {
  const auto uid = static_cast<unsigned long>(::getuid());
  std::vector<std::string> p{"cuda.shm." + hex(uid) + "."};
  if (const auto dec = "cuda.shm." + std::to_string(uid) + "."; dec != p[0])
    p.push_back(dec);
  return p;
}

// cuda.shm.<uid>.<hex digits>.<hex digits>, this user's.
bool driver_file_name(const std::string& name) {
  auto hex_digits = [&](std::size_t from, std::size_t to) {
    return to > from && name.find_first_not_of("0123456789abcdef", from) >= to;
  };
  for (const auto& prefix : user_prefixes()) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0)
      continue;
    const auto dot = name.find('.', prefix.size());
    if (dot != std::string::npos && hex_digits(prefix.size(), dot)
        && hex_digits(dot + 1, name.size()))
      return true;
  }
  return false;
}

// Unlinks /dev/shm/<name> if it is a regular file of this user.
bool remove_regular(int dir, const std::string& name) {
  struct stat st {};
  return ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)
         && st.st_uid == ::geteuid() && ::unlinkat(dir, name.c_str(), 0) == 0;
}

} // namespace

std::size_t remove_cuda_ipc_files(const std::vector<std::string>& names) noexcept {
  std::size_t removed = 0;
  try {
    const fd_guard shm{::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (shm.fd < 0)
      return 0;
    for (const auto& name : names)
      if (driver_file_name(name) && remove_regular(shm.fd, name))
        ++removed;
  } catch (...) {
  }
  return removed;
}

std::size_t remove_cuda_ipc_files(long pid) noexcept {
  std::size_t removed = 0;
  try {
    const fd_guard shm{::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    if (shm.fd < 0)
      return 0;
    std::vector<std::string> prefixes;
    for (const auto& user : user_prefixes())
      prefixes.push_back(user + hex(static_cast<unsigned long>(pid)) + ".");
    for (const auto& name : entries(shm.fd))
      for (const auto& prefix : prefixes)
        if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0
            && driver_file_name(name) && remove_regular(shm.fd, name)) {
          ++removed;
          break;
        }
  } catch (...) {
  }
  return removed;
}

} // namespace ag
