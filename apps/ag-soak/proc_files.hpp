// What ag-soak reads from /proc: this process's memory (RssAnon, VmHWM) and its ag-runner
// children, the one of a given lane among them. Free functions; every read is one small file.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

namespace ag::soak {

// A field of /proc/self/status in KiB ("RssAnon", "VmHWM"); -1 when it cannot be read.
inline long status_kib(const char* field) {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr)
    return -1;
  const std::size_t len = std::strlen(field);
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, field, len) == 0 && line[len] == ':') {
      kib = std::strtol(line + len + 1, nullptr, 10);
      break;
    }
  std::fclose(f);
  return kib;
}

// The first line of a small /proc file, or empty.
inline std::string first_line(const std::string& path) {
  std::string out;
  if (FILE* f = std::fopen(path.c_str(), "r")) {
    char buf[1024] = {};
    if (std::fgets(buf, sizeof buf, f) != nullptr)
      out = buf;
    std::fclose(f);
  }
  return out;
}

// The live ag-runner children of this process: /proc/<pid>/stat reads "pid (ag-runner) S ppid ...".
// A zombie (state Z) has ended and is not counted.
inline std::vector<pid_t> runner_children() {
  std::vector<pid_t> out;
  const std::string me = std::to_string(::getpid());
  DIR* d = ::opendir("/proc");
  if (d == nullptr)
    return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const std::string stat = first_line("/proc/" + name + "/stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos || close + 2 >= stat.size()
        || stat.find("(ag-runner)") == std::string::npos)
      continue;
    const std::string rest = stat.substr(close + 2); // "S ppid ..."
    const char state = rest[0];
    const auto ppid_at = rest.find(' ');
    if (state == 'Z' || ppid_at == std::string::npos)
      continue;
    const std::string ppid = rest.substr(ppid_at + 1, rest.find(' ', ppid_at + 1) - ppid_at - 1);
    if (ppid == me)
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  ::closedir(d);
  return out;
}

// The ag-runner child that runs lane `lane` (1 = the first device): --lane=<lane> is one of its
// arguments. 0 when there is none.
inline pid_t runner_of_lane(int lane) {
  const std::string suffix = "--lane=" + std::to_string(lane);
  for (const pid_t pid : runner_children()) {
    std::string cmdline;
    if (FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/cmdline").c_str(), "r")) {
      char buf[4096];
      const auto n = std::fread(buf, 1, sizeof buf, f);
      std::fclose(f);
      cmdline.assign(buf, n);
    }
    // Arguments end in '\0': look for a whole one.
    for (std::size_t at = cmdline.find(suffix); at != std::string::npos;
         at = cmdline.find(suffix, at + 1)) {
      const std::size_t end = at + suffix.size();
      if ((at == 0 || cmdline[at - 1] == '\0') && (end == cmdline.size() || cmdline[end] == '\0'))
        return pid;
    }
  }
  return 0;
}

// The state letter of `pid` in /proc ('R', 'S', 'T' stopped, 'Z' zombie...), '-' when gone.
inline char process_state(pid_t pid) {
  const std::string stat = first_line("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() ? stat[close + 2] : '-';
}

// True while `pid` exists and is not a zombie.
inline bool alive(pid_t pid) {
  const std::string stat = first_line("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

} // namespace ag::soak
