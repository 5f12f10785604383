#include "apps/ag-bench/logged_process.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actorgraph/error.hpp"

extern char** environ;

namespace ag::bench {

namespace {

exit_status status_of(int raw) {
  exit_status st;
  if (WIFSIGNALED(raw))
    st.signal = WTERMSIG(raw);
  else
    st.code = WEXITSTATUS(raw);
  return st;
}

// The attributes and file actions of one posix_spawn, released when it has been called.
struct spawn_setup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t files;
  spawn_setup() {
    ::posix_spawnattr_init(&attr);
    ::posix_spawn_file_actions_init(&files);
  }
  ~spawn_setup() {
    ::posix_spawn_file_actions_destroy(&files);
    ::posix_spawnattr_destroy(&attr);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
};

} // namespace

logged_process logged_process::spawn(const std::string& program,
                                     const std::vector<std::string>& args,
                                     const std::string& log_file) {
  if (::access(program.c_str(), X_OK) != 0)
    throw error("cannot start " + program + ": " + std::strerror(errno));
  std::vector<std::string> storage{program};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage)
    argv.push_back(s.data());
  argv.push_back(nullptr);

  spawn_setup setup;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  // No blocked signals and default dispositions, whatever ag-bench's threads had.
  ::posix_spawnattr_setsigmask(&setup.attr, &none);
  ::posix_spawnattr_setsigdefault(&setup.attr, &all);
  ::posix_spawnattr_setpgroup(&setup.attr, 0);
  ::posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
                                            | POSIX_SPAWN_SETPGROUP);
  ::posix_spawn_file_actions_addopen(&setup.files, STDOUT_FILENO, log_file.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
  ::posix_spawn_file_actions_adddup2(&setup.files, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &setup.files, &setup.attr, argv.data(),
                               environ);
  if (rc != 0)
    throw error("cannot start " + program + ": " + std::strerror(rc));
  logged_process p;
  p.pid_ = pid;
  p.log_file_ = log_file;
  return p;
}

logged_process::logged_process(logged_process&& other) noexcept
  : pid_(std::exchange(other.pid_, -1)), log_file_(std::move(other.log_file_)),
    status_(std::exchange(other.status_, std::nullopt)) {}

logged_process& logged_process::operator=(logged_process&& other) noexcept {
  if (this != &other) {
    kill_and_reap();
    pid_ = std::exchange(other.pid_, -1);
    log_file_ = std::move(other.log_file_);
    status_ = std::exchange(other.status_, std::nullopt);
  }
  return *this;
}

logged_process::~logged_process() { kill_and_reap(); }

const std::optional<exit_status>& logged_process::try_wait() noexcept {
  if (pid_ > 0 && !status_) {
    int raw = 0;
    if (::waitpid(pid_, &raw, WNOHANG) == pid_)
      status_ = status_of(raw);
  }
  return status_;
}

const std::optional<exit_status>& logged_process::wait_for(
  std::chrono::milliseconds timeout) noexcept {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!try_wait() && pid_ > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  return try_wait();
}

void logged_process::kill(int sig) noexcept {
  if (running())
    ::kill(pid_, sig);
}

void logged_process::kill_and_reap() noexcept {
  if (!running())
    return;
  ::kill(pid_, SIGKILL);
  int raw = 0;
  if (::waitpid(pid_, &raw, 0) == pid_)
    status_ = status_of(raw);
}

std::string logged_process::log_tail(std::size_t max_bytes) const {
  std::ifstream in{log_file_};
  std::ostringstream all;
  all << in.rdbuf();
  std::string text = all.str();
  if (text.size() > max_bytes) {
    text.erase(0, text.size() - max_bytes);
    if (const auto nl = text.find('\n'); nl != std::string::npos)
      text.erase(0, nl + 1);
  }
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

} // namespace ag::bench
