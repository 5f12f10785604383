#include "ipc/sub_process.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <utility>

#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "graph/deadline.hpp"

#include "actorgraph/error.hpp"
#include "ipc/cleanup_registry.hpp"

extern char** environ;

namespace ag {

std::string exit_status::str() const {
  if (signal != 0) {
    const char* name = ::strsignal(signal);
    return "killed by signal " + std::to_string(signal) + (name ? " (" + std::string{name} + ")" : "");
  }
  return "exited with code " + std::to_string(code);
}

sub_process sub_process::spawn(const std::string& program, const std::vector<std::string>& args,
                               const std::vector<int>& inherit) {
  if (::access(program.c_str(), X_OK) != 0)
    throw error("cannot start " + program + ": " + std::strerror(errno));
  std::vector<std::string> storage;
  storage.push_back(program);
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage)
    argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawnattr_t attr;
  ::posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  // The child starts with no blocked signals and default dispositions, whatever the controller's
  // threads had, in a process group of its own.
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
                                      | POSIX_SPAWN_SETPGROUP);
  // dup2 of a descriptor onto itself clears its close-on-exec flag in the child alone (glibc).
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  for (int fd : inherit)
    ::posix_spawn_file_actions_adddup2(&actions, fd, fd);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw error("cannot start " + program + ": " + std::strerror(rc));
  sub_process p;
  p.pid_ = pid;
  p.cleanup_slot_ = cleanup::remember_pid(pid);
  p.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (p.pidfd_ < 0) {
    const int saved = errno;
    p.kill_and_reap();
    throw error("cannot watch " + program + " (pid " + std::to_string(pid)
                + "): pidfd_open: " + std::strerror(saved));
  }
  return p;
}

sub_process::sub_process(sub_process&& other) noexcept
  : pid_(std::exchange(other.pid_, -1)), pidfd_(std::exchange(other.pidfd_, -1)),
    cleanup_slot_(std::exchange(other.cleanup_slot_, -1)),
    status_(std::exchange(other.status_, std::nullopt)) {}

sub_process& sub_process::operator=(sub_process&& other) noexcept {
  if (this != &other) {
    this->~sub_process();
    new (this) sub_process(std::move(other));
  }
  return *this;
}

sub_process::~sub_process() {
  kill_and_reap();
  if (pidfd_ >= 0)
    ::close(pidfd_);
}

const std::optional<exit_status>& sub_process::try_wait() noexcept {
  if (pid_ <= 0 || status_)
    return status_;
  int st = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &st, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    exit_status s;
    if (WIFSIGNALED(st))
      s.signal = WTERMSIG(st);
    else
      s.code = WEXITSTATUS(st);
    status_ = s;
  } else if (r < 0) {
    status_ = exit_status{-1, 0}; // not our child any more: nothing left to wait for
  }
  if (status_) { // reaped: its pid may be reused, so a stop signal must not kill it any more
    cleanup::forget_pid(cleanup_slot_);
    cleanup_slot_ = -1;
  }
  return status_;
}

const std::optional<exit_status>& sub_process::wait_for(std::chrono::milliseconds timeout) noexcept {
  const auto deadline = deadline_after(timeout);
  while (!try_wait() && pidfd_ >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      break;
    pollfd pfd{pidfd_, POLLIN, 0};
    // poll takes an int: a long (or no) deadline is waited for in slices
    ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000)));
  }
  return status_;
}

void sub_process::kill(int sig) noexcept {
  if (running())
    ::kill(pid_, sig);
}

void sub_process::kill_and_reap() noexcept {
  if (!running())
    return;
  ::kill(pid_, SIGKILL);
  while (!try_wait()) {
    pollfd pfd{pidfd_, POLLIN, 0};
    ::poll(&pfd, 1, 100);
  }
}

} // namespace ag
