// How ag-soak starts a scenario in a fresh process and waits for it (scenario_process.hpp).
#include "apps/ag-soak/scenario_process.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ag::soak {

namespace {

using clock_type = std::chrono::steady_clock;

// Between SIGTERM and SIGKILL of a process past its deadline.
constexpr std::chrono::seconds term_grace{5};

// Waits for `pid` until `until`; true once reaped (status in `st`).
bool reap_until(pid_t pid, int& st, clock_type::time_point until) {
  for (;;) {
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid)
      return true;
    if (r < 0 && errno != EINTR)
      return true; // not our child any more: nothing left to wait for
    if (clock_type::now() >= until)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
}

std::string describe(const std::vector<std::string>& args) {
  std::string out = "ag-soak";
  for (const auto& a : args)
    out += " " + a;
  return out;
}

} // namespace

scenario_outcome run_scenario_process(const std::vector<std::string>& args,
                                      std::chrono::seconds deadline) {
  scenario_outcome out;
  const std::string what = describe(args);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.problem = what + ": cannot make a pipe: " + std::strerror(errno);
    return out;
  }
  // Everything the child needs is ready before fork: after it, only async-signal-safe calls.
  std::vector<std::string> storage{"ag-soak"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const auto t0 = clock_type::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    out.problem = what + ": fork failed: " + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return out;
  }
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO); // dup2 clears O_CLOEXEC on the copy
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)
      ::_exit(127);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  const auto until = t0 + deadline;
  std::string pending;
  bool eof = false;
  while (!eof) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now());
    if (left.count() <= 0)
      break;
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min<long long>(left.count(), 1000)));
    if (r < 0 && errno != EINTR)
      break;
    if (r <= 0)
      continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      eof = true;
      break;
    }
    pending.append(buf, std::size_t(n));
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (!line.empty() && line[0] == '{')
        out.line = line;
      else
        std::printf("%s\n", line.c_str());
    }
  }
  if (!pending.empty() && pending[0] == '{')
    out.line = pending;
  ::close(fds[0]);
  int st = 0;
  if (!eof || !reap_until(pid, st, until)) {
    out.timed_out = true;
    ::kill(pid, SIGTERM);
    if (!reap_until(pid, st, clock_type::now() + term_grace)) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
    }
  }
  out.wall_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (WIFEXITED(st))
    out.exit_code = WEXITSTATUS(st);
  else if (WIFSIGNALED(st))
    out.signal = WTERMSIG(st);
  if (out.timed_out)
    out.problem = what + ": did not end within " + std::to_string(deadline.count())
                  + " s; it was killed";
  else if (out.signal != 0)
    out.problem = what + ": ended by signal " + std::to_string(out.signal) + " ("
                  + strsignal(out.signal) + ")";
  else if (out.exit_code == 127)
    out.problem = what + ": could not be started (exec of /proc/self/exe failed)";
  else if (out.line.empty())
    out.problem = what + ": exited with code " + std::to_string(out.exit_code)
                  + " and printed no figures";
  return out;
}

} // namespace ag::soak
