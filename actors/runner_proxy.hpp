// runner_proxy: the controller's handle on one child process (the seed's RemoteRunnerInProcess,
// owning its SubProcess and SubProcessSync). Writes the start-up arguments, execs ag-runner, waits
// for the started handshake, then watches the process through its pidfd: when the child dies, the
// proxy quits with an error naming the device, the pid and the exit code or signal, which the
// executor's monitor turns into failed work. Detached: it blocks in polls and waits.
//
//   starting --started--> running --(shutdown)--> stopping --child exited or killed--> stopped
//      |                     |                                   (segment removed, child reaped)
//      +--child exits, or    +--child dies: quits with device_failed (exit code or signal)
//         deadline: quits with device_failed (the child's own error if it left one)
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/protocol.hpp"
#include "ipc/wire.hpp"

namespace ag {

struct proxy_setup {
  std::string runner_path;  // ag-runner
  std::string segment_name; // its SubProcessSync segment
  wire::startup_args args;
  std::vector<std::string> extra_args; // after --remote-runner --sync-fd=: the shared-memory path
  std::vector<int> inherit; // descriptors the child inherits (the store's, the channel's)
  std::string name; // how its errors name the device ("n1/cuda:0"); empty: args.where
  std::chrono::milliseconds start_timeout{60000}; // for the started handshake
  std::chrono::milliseconds stop_timeout{60000};  // for the child's exit at shutdown
};

runner_proxy_actor spawn_runner_proxy(caf::actor_system& sys, proxy_setup setup);

} // namespace ag
