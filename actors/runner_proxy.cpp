#include "actors/runner_proxy.hpp"

#include <csignal>

#include <poll.h>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/protocol.hpp"
#include "graph/deadline.hpp"
#include "ipc/leftovers.hpp"
#include "ipc/sub_process.hpp"
#include "ipc/sub_process_sync.hpp"

namespace ag {

namespace {

// Between polls of the pidfd the proxy looks at its mailbox (shutdown); a death wakes it at once.
// Each slice is a wake-up of an idle runtime.
constexpr std::chrono::milliseconds poll_slice{100};

struct proxy_state {
  proxy_setup setup;
  sub_process_sync sync; // declared before the process: the child is reaped before the segment goes
  sub_process child;
  bool files_removed = false; // the driver's files of the reaped child: removed once

  std::string who() const {
    return device_name() + " child (ag-runner, pid " + std::to_string(child.pid()) + ")";
  }

  std::string device_name() const {
    return setup.name.empty() ? setup.args.where.str() : setup.name;
  }

  // Waits one poll slice for the child's death (its pidfd); its status once it is gone.
  const std::optional<exit_status>& wait_slice() {
    pollfd pfd{child.pidfd(), POLLIN, 0};
    ::poll(&pfd, 1, static_cast<int>(poll_slice.count()));
    const auto& status = child.try_wait();
    if (status)
      remove_driver_files();
    return status;
  }

  // Kills the child and reaps it, now.
  void kill_and_reap() noexcept {
    child.kill_and_reap();
    remove_driver_files();
  }

  // The files the CUDA driver made in /dev/shm for a reaped child's interprocess events go with
  // it (its own, nothing else): those it named in its segment, whatever way it ended (a child
  // killed had no chance to destroy its events), and, killed by a signal, those named after its
  // pid (where the driver's pid is the one this process sees).
  void remove_driver_files() noexcept {
    const auto& status = child.try_wait();
    if (!status || files_removed)
      return;
    files_removed = true;
    try {
      remove_cuda_ipc_files(sync.driver_files());
    } catch (...) { // its segment's lock not taken: a child killed holding it
    }
    if (status->signal != 0)
      remove_cuda_ipc_files(child.pid());
  }

  // The child's own account of a failed start, when it left one.
  std::string reason(const exit_status& st) const {
    std::string why = st.str();
    try {
      if (auto err = sync.child_error(); !err.empty())
        why += ": " + err;
    } catch (...) {
    }
    return why;
  }

  // Never leaves the child behind, whatever way the proxy ends.
  ~proxy_state() {
    if (child.running()) {
      sync.notify_exit();
      child.wait_for(std::chrono::milliseconds{200});
      kill_and_reap();
    }
  }

  static inline const char* name = "ag.runner_proxy";
};

using proxy_self = runner_proxy_actor::stateful_pointer<proxy_state>;

// The exit flag is set: the child has until `deadline` to exit, then it is killed. A kill
// (its controller lost, on a node) ends the wait at once. Either way the proxy quits once the
// child is gone, an orderly exit (code 0) quietly, anything else with the reason.
runner_proxy_actor::behavior_type stopping(proxy_self self,
                                           std::chrono::steady_clock::time_point deadline) {
  return {
    [=](poll_atom) {
      auto& st = self->state;
      if (const auto& status = st.wait_slice()) {
        if (status->code != 0 || status->signal != 0)
          return self->quit(make_error(errc::device_failed,
                                       st.who() + " " + st.reason(*status) + " at shutdown"));
        return self->quit();
      }
      if (std::chrono::steady_clock::now() >= deadline) { // reported by the executor
        st.kill_and_reap();
        return self->quit(make_error(errc::device_failed, st.who() + " did not exit within "
                                                           + duration_string(st.setup.stop_timeout)
                                                           + " of shutdown: killed"));
      }
      self->send(self, poll_atom::value);
    },
    [=](kill_atom) { self->state.child.kill(SIGKILL); }, // the poll then reports its death
    [](shutdown_atom) {},                                // stopping already
  };
}

runner_proxy_actor::behavior_type running(proxy_self self) {
  return {
    [=](poll_atom) {
      auto& st = self->state;
      if (const auto& status = st.wait_slice()) {
        const bool clean = status->code == 0 && status->signal == 0;
        self->quit(make_error(clean ? errc::runner_exited : errc::device_failed,
                              st.who() + " " + st.reason(*status)));
        return;
      }
      self->send(self, poll_atom::value);
    },
    [=](kill_atom) { self->state.child.kill(SIGKILL); }, // the poll then reports its death
    [=](shutdown_atom) {
      self->state.sync.notify_exit();
      // The poll already on its way to this actor goes on in the stopping state.
      self->become(stopping(self, deadline_after(self->state.setup.stop_timeout)));
    },
  };
}

runner_proxy_actor::behavior_type runner_proxy(proxy_self self, proxy_setup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  const auto dev = st.device_name();
  try {
    st.sync = sub_process_sync::create(st.setup.segment_name, wire::encode(st.setup.args));
    // Which runtime and lane it serves, for ps (and the tests): ag-<pid>-actorgraph-<tag>.
    const auto& seg = st.setup.segment_name;
    std::vector<std::string> argv{"--remote-runner", "--sync-fd=" + std::to_string(st.sync.fd()),
                                  "--runtime=" + seg.substr(0, seg.rfind("-sync-")),
                                  "--lane=" + std::to_string(st.setup.args.lane)};
    argv.insert(argv.end(), st.setup.extra_args.begin(), st.setup.extra_args.end());
    auto inherit = st.setup.inherit;
    inherit.push_back(st.sync.fd());
    st.child = sub_process::spawn(st.setup.runner_path, argv, inherit);
    st.sync.unlink_name(); // the child has its descriptor: no name is left to outlive them
    const auto deadline = deadline_after(st.setup.start_timeout);
    if (!st.sync.wait_started(deadline, [&] { return !st.child.try_wait(); })) {
      if (const auto& status = st.child.try_wait())
        throw error(st.who() + " failed to start: " + st.reason(*status));
      throw error(st.who() + " did not start within " + duration_string(st.setup.start_timeout));
    }
  } catch (const std::exception& e) {
    const std::string what = e.what();
    self->quit(make_error(errc::device_failed,
                          what.rfind(dev, 0) == 0 ? what : dev + ": " + what));
    return runner_proxy_actor::behavior_type::make_empty_behavior();
  }
  self->send(self, poll_atom::value);
  return running(self);
}

} // namespace

runner_proxy_actor spawn_runner_proxy(caf::actor_system& sys, proxy_setup setup) {
  return sys.spawn<caf::detached>(runner_proxy, std::move(setup));
}

} // namespace ag
