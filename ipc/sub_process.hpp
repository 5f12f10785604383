// sub_process: one child process started with exec (posix_spawn: never a bare fork, since CUDA
// cannot survive one), watched through a pidfd so that its death wakes a poll at once, and never
// left behind: destroying a running sub_process kills and reaps it, and so does a stop signal
// (actorgraph/stop_signals.hpp). The seed's SubProcess.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <sys/types.h>

namespace ag {

struct exit_status {
  int code = 0;   // when it exited
  int signal = 0; // when a signal ended it

  // "exited with code 3", "killed by signal 9 (Killed)".
  std::string str() const;
};

class sub_process {
public:
  // Starts `program` with `args` (argv[1..]) in a process group of its own, so that a terminal's
  // Ctrl-C reaches the controller, which then shuts its children down. Throws ag::error naming the
  // program and the reason when it cannot be started. `inherit`: descriptors of this process
  // (close-on-exec, as every descriptor of the runtime) that the child gets under the same
  // numbers, open across its exec; no other descriptor of this process reaches it.
  static sub_process spawn(const std::string& program, const std::vector<std::string>& args,
                           const std::vector<int>& inherit = {});

  sub_process() noexcept = default;
  sub_process(sub_process&& other) noexcept;
  sub_process& operator=(sub_process&& other) noexcept;
  ~sub_process();

  pid_t pid() const noexcept { return pid_; }
  // Readable (POLLIN) once the process has exited; -1 when there is none.
  int pidfd() const noexcept { return pidfd_; }
  bool running() const noexcept { return pid_ > 0 && !status_; }

  // Reaps the process if it has exited; its status from then on.
  const std::optional<exit_status>& try_wait() noexcept;

  // Waits up to `timeout` for the process to exit.
  const std::optional<exit_status>& wait_for(std::chrono::milliseconds timeout) noexcept;

  void kill(int sig) noexcept;

  // SIGKILL and reap, if it still runs.
  void kill_and_reap() noexcept;

private:
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int cleanup_slot_ = -1; // killed by a stop signal while it runs (ipc/cleanup_registry.hpp)
  std::optional<exit_status> status_;
};

static_assert(std::is_nothrow_move_constructible_v<sub_process>);

} // namespace ag
