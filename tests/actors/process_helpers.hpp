// Helpers of the multi-process tests: what a process left in /proc, /dev/shm and a directory,
// and a private TMPDIR that shows every runtime directory made meanwhile.
#pragma once

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>

namespace ag::test {

// How much smaller the heavy tests' work is made under ThreadSanitizer, where every copy and
// message costs tens of times more (the same paths run, on less data).
#if defined(__SANITIZE_THREAD__)
constexpr std::size_t tsan_shrink = 8;
#else
constexpr std::size_t tsan_shrink = 1;
#endif

// How much longer the node tests' deadlines are under ThreadSanitizer, where every process of
// a node (a controller, ag-node, children with an I/O thread per data stream) runs many times
// slower: a handshake or a first broadcast would pass a deadline made for real speed.
#if defined(__SANITIZE_THREAD__)
constexpr int tsan_slow = 10;
#else
constexpr int tsan_slow = 1;
#endif

inline std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string n = e->d_name; n != "." && n != "..")
        out.push_back(n);
    ::closedir(d);
  }
  return out;
}

// The children of `parent` (this process by default) that run ag-runner.
inline std::vector<pid_t> runner_children(pid_t parent = ::getpid()) {
  std::vector<pid_t> out;
  const auto me = std::to_string(parent);
  for (const auto& name : list_dir("/proc")) {
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::string stat;
    if (FILE* f = std::fopen(("/proc/" + name + "/stat").c_str(), "r")) {
      char buf[512] = {};
      stat = std::fgets(buf, sizeof buf, f) ? buf : "";
      std::fclose(f);
    }
    // pid (comm) state ppid ...
    const auto close = stat.rfind(')');
    if (close == std::string::npos || stat.find("(ag-runner)") == std::string::npos)
      continue;
    const auto rest = stat.substr(close + 2);
    const auto ppid = rest.substr(rest.find(' ') + 1);
    if (ppid.substr(0, ppid.find(' ')) == me)
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// The transport the tests' runtimes use: $AG_TEST_TRANSPORT, "sockets" or "shared_memory" (the
// default, also when it is unset or empty). tests/CMakeLists.txt runs the process-mode, fault and
// lifecycle tests once more with it set to sockets (the ctest sockets-path). Any other value ends
// the program, naming it, rather than testing a path nobody asked for.
inline ag::transport transport_under_test() {
  const char* env = std::getenv("AG_TEST_TRANSPORT");
  const std::string name = env != nullptr ? env : "";
  if (name.empty() || name == "shared_memory")
    return ag::transport::shared_memory;
  if (name == "sockets")
    return ag::transport::sockets;
  std::fprintf(stderr, "AG_TEST_TRANSPORT=%s: expected shared_memory or sockets\n", name.c_str());
  std::abort();
}

// Its name, as ag-replay's --transport takes it.
inline std::string transport_under_test_name() {
  return transport_under_test() == ag::transport::sockets ? "sockets" : "shared_memory";
}

// The abstract unix endpoints the runtimes of process `pid` listen on ("@ag-<pid>-actorgraph-...",
// from /proc/net/unix: the listening ones, flag __SO_ACCEPTCON).
inline std::vector<std::string> abstract_endpoints(pid_t pid) {
  std::vector<std::string> out;
  const std::string prefix = "@ag-" + std::to_string(pid) + "-actorgraph-";
  if (FILE* f = std::fopen("/proc/net/unix", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
      char path[256] = {};
      unsigned long flags = 0;
      // Num RefCount Protocol Flags Type St Inode Path
      if (std::sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %255s", &flags, path) == 2
          && (flags & 0x10000) != 0 && std::string{path}.rfind(prefix, 0) == 0)
        out.push_back(path);
    }
    std::fclose(f);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// What a plain connection to abstract endpoint `at` ("@name") by a process of user `uid` (another
// than this one's only as root) reads first: "greeting" (ZMTP's first byte, 0xFF), "closed" (the
// endpoint closed it without a byte), or why neither.
inline std::string greets(const std::string& at, uid_t uid) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (uid != ::getuid() && ::setuid(uid) != 0)
      ::_exit(4);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::size_t n = std::min(at.size() - 1, sizeof addr.sun_path - 1);
    std::memcpy(addr.sun_path + 1, at.data() + 1, n); // sun_path[0] = 0: abstract
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr),
                  static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n)) != 0)
      ::_exit(3);
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 5000) != 1)
      ::_exit(2);
    unsigned char c = 0;
    const auto got = ::read(fd, &c, 1);
    ::_exit(got == 1 && c == 0xFF ? 0 : got == 0 ? 1 : 5);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  switch (WIFEXITED(status) ? WEXITSTATUS(status) : -1) {
    case 0: return "greeting";
    case 1: return "closed";
    case 2: return "nothing within 5 s";
    case 3: return "cannot connect";
    case 4: return "cannot become that user";
    default: return "something else";
  }
}

// The shared-memory objects of the runtimes of process `pid` (their names begin with ag-<pid>-).
inline std::vector<std::string> my_shm(pid_t pid = ::getpid()) {
  std::vector<std::string> out;
  const auto prefix = "ag-" + std::to_string(pid) + "-";
  for (const auto& n : list_dir("/dev/shm"))
    if (n.rfind(prefix, 0) == 0)
      out.push_back(n);
  return out;
}

// Points TMPDIR at a fresh directory for the life of the object, so a test can see every runtime
// directory made meanwhile.
struct private_tmpdir {
  std::string path;
  std::string saved;
  bool had = false;

  private_tmpdir() {
    char templ[] = "/tmp/ag-test-XXXXXX";
    path = ::mkdtemp(templ);
    if (const char* t = std::getenv("TMPDIR")) {
      had = true;
      saved = t;
    }
    ::setenv("TMPDIR", path.c_str(), 1);
  }
  ~private_tmpdir() {
    if (had)
      ::setenv("TMPDIR", saved.c_str(), 1);
    else
      ::unsetenv("TMPDIR");
    ::rmdir(path.c_str());
  }
};


// Polls `done` every 10 ms until it holds (true) or `limit` passes (false).
template <class F>
bool within(std::chrono::milliseconds limit, F done) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  return true;
}

// The fields of /proc/PID/stat after the command's closing parenthesis ("S 1 ..."); empty when
// the process is gone.
inline std::string stat_after_name(pid_t pid) {
  char buf[1024] = {};
  if (FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r")) {
    if (!std::fgets(buf, sizeof buf, f))
      buf[0] = 0;
    std::fclose(f);
  }
  const char* close = std::strrchr(buf, ')');
  return close && close[1] == ' ' ? std::string{close + 2} : std::string{};
}

// The state letter of process `pid` (/proc/PID/stat: R, S, T, Z, ...); 0 when it is gone.
inline char process_state(pid_t pid) {
  const std::string rest = stat_after_name(pid);
  return rest.empty() ? 0 : rest[0];
}

// CPU time process `pid` has used, user and system, in clock ticks (/proc/PID/stat fields 14
// and 15; 100 a second on Linux); 0 when it is gone.
inline long process_cpu_ticks(pid_t pid) {
  long utime = 0, stime = 0;
  // State, then fields 4 to 13, then utime (14) and stime (15).
  if (std::sscanf(stat_after_name(pid).c_str(), "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld",
                  &utime, &stime) != 2)
    return 0;
  return utime + stime;
}

// Stops process `pid` (SIGSTOP) and returns once the kernel reports it stopped (within 5 s):
// a stop takes effect as each of its threads next runs, not when kill() returns, and a test that
// sends work right after must know that none of it can be read.
inline bool stop_process(pid_t pid) {
  return ::kill(pid, SIGSTOP) == 0
         && within(std::chrono::seconds{5}, [&] { return process_state(pid) == 'T'; });
}

// The ag-runner child of `parent` that runs lane `lane` (1 = the first device), found through the
// --lane=<lane> on its command line; 0 if there is none.
inline pid_t runner_of_lane(int lane, pid_t parent = ::getpid()) {
  const std::string suffix = " --lane=" + std::to_string(lane);
  for (pid_t pid : runner_children(parent)) {
    std::string cmdline;
    if (FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/cmdline").c_str(), "r")) {
      char buf[1024] = {};
      const auto n = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      cmdline.assign(buf, n);
    }
    for (auto& c : cmdline)
      if (c == '\0')
        c = ' ';
    cmdline = " " + cmdline;
    const auto at = cmdline.find(suffix);
    if (at != std::string::npos
        && (at + suffix.size() == cmdline.size() || cmdline[at + suffix.size()] == ' '))
      return pid;
  }
  return 0;
}

// True once `pid` has exited (gone, or a zombie nobody reaped yet).
inline bool exited(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr)
    return true;
  char buf[512] = {};
  const bool read = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  const std::string stat = read ? buf : "";
  const auto close = stat.rfind(')');
  return close == std::string::npos || stat.substr(close + 2, 1) == "Z";
}

// True once every one of `children` has exited, within `limit`.
inline bool all_exited_within(std::chrono::milliseconds limit, const std::vector<pid_t>& children) {
  return within(limit, [&] { return std::all_of(children.begin(), children.end(), exited); });
}

// What is written to pipe `fd` until its writers close it or `deadline` passes.
inline std::string read_until_closed(int fd, std::chrono::steady_clock::time_point deadline) {
  std::string text;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0)
      break;
    char buf[512];
    const auto n = ::read(fd, buf, sizeof buf);
    if (n <= 0)
      break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

// How a program run by run_collected() ended.
struct program_outcome {
  pid_t pid = 0;
  bool ran = true;  // false: `prepare` gave up (why in `text`)
  int code = -1;    // its exit code, or -1
  int signal = 0;   // the signal that ended it, or 0
  std::string text; // what it wrote to stdout and stderr
};

// Runs `program ARGS` in a forked child with $AG_RUNNER set to `runner`, its stdout and stderr
// collected, after `prepare()` ran in that child: it returns an empty string to go on, or why it
// cannot (the outcome then has ran == false). Past `limit` the program is killed.
template <class Prepare>
program_outcome run_collected(const char* program, const std::vector<std::string>& args,
                              const char* runner, Prepare prepare,
                              std::chrono::milliseconds limit = std::chrono::seconds{120}) {
  constexpr int gave_up = 77;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    return {0, false, -1, 0, "pipe2 failed"};
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (const std::string why = prepare(); !why.empty()) {
      (void)!::write(pipe_fds[1], why.data(), why.size());
      ::_exit(gave_up);
    }
    ::dup2(pipe_fds[1], 1);
    ::dup2(pipe_fds[1], 2);
    std::signal(SIGBUS, SIG_DFL);
    ::setenv("AG_RUNNER", runner, 1);
    std::vector<char*> argv{const_cast<char*>(program)};
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  program_outcome out;
  out.pid = pid;
  if (pid < 0) {
    ::close(pipe_fds[0]);
    return {0, false, -1, 0, "fork failed"};
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  out.text = read_until_closed(pipe_fds[0], deadline);
  ::close(pipe_fds[0]);
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(pid, &status, WNOHANG)) == 0
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  if (reaped == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    out.text += " (killed: it did not finish within the limit)";
  }
  out.ran = !(WIFEXITED(status) && WEXITSTATUS(status) == gave_up);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return out;
}

// `name` beside this test program (a packed copy on the GPU machine), else `fallback` (where
// the build put it).
inline std::string beside_this_program(const std::string& name, const std::string& fallback) {
  char exe[4096];
  const auto n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<std::size_t>(n));
    dir = dir.substr(0, dir.rfind('/')) + "/" + name;
    if (::access(dir.c_str(), X_OK) == 0)
      return dir;
  }
  return fallback;
}

// A runtime over sim devices for the multi-process tests: both modes, a 64 MiB store.
inline ag::graph_option sim_options(bool process, const char* devices = "sim:0,sim:1",
                                    std::chrono::milliseconds wait = std::chrono::seconds{30}) {
  ag::graph_option opt;
  opt.devices = ag::parse_devices(devices);
  opt.per_device_per_process = process;
  opt.store_bytes = std::size_t{64} << 20;
  opt.wait_timeout = wait;
  opt.transport = transport_under_test();
  return opt;
}


} // namespace ag::test
