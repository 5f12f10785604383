// logged_process: a program ag-bench starts beside itself (ag-keygen, ag-node) whose standard
// output and error go to a file, so that its lines neither mix into ag-bench's table nor are lost
// when it fails: ag-bench reads them back (a port it printed, or what to show in an error).
// Started with posix_spawn, like ipc/sub_process.hpp, and never left behind: destroying one that
// still runs kills and reaps it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <sys/types.h>

#include "ipc/sub_process.hpp"

namespace ag::bench {

class logged_process {
public:
  // Starts `program` with `args` (argv[1..]), its stdout and stderr appended to `log_file`
  // (created with mode 0600 if missing), in a process group of its own so that a terminal's
  // Ctrl-C reaches only ag-bench, which stops it. Throws ag::error naming the program and the
  // reason when it cannot be started.
  static logged_process spawn(const std::string& program, const std::vector<std::string>& args,
                              const std::string& log_file);

  logged_process() noexcept = default;
  logged_process(logged_process&& other) noexcept;
  logged_process& operator=(logged_process&& other) noexcept;
  ~logged_process();

  pid_t pid() const noexcept { return pid_; }
  bool running() const noexcept { return pid_ > 0 && !status_; }
  const std::string& log_file() const noexcept { return log_file_; }

  // Reaps the process if it has exited; its status from then on.
  const std::optional<exit_status>& try_wait() noexcept;
  // Waits up to `timeout` for the process to exit.
  const std::optional<exit_status>& wait_for(std::chrono::milliseconds timeout) noexcept;

  // Sends `sig` if it still runs.
  void kill(int sig) noexcept;
  // SIGKILL and reap, if it still runs.
  void kill_and_reap() noexcept;

  // The last `max_bytes` of its log (from the start of a line), for an error message.
  std::string log_tail(std::size_t max_bytes = 2000) const;

private:
  pid_t pid_ = -1;
  std::string log_file_;
  std::optional<exit_status> status_;
};

static_assert(std::is_nothrow_move_constructible_v<logged_process>);

} // namespace ag::bench
