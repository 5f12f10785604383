// ag-runner: the child process of one device in process mode (the seed's
// RemoteRunnerInProcessLauncher::BackgroundProcessExecMain and its RemoteRunner). The controller
// starts it as
//
//   ag-runner --remote-runner --sync-fd=FD --runtime=NAME --lane=L [--channel-fd=FD
//             --channel-bytes=N --spin-ns=T] [--export-wait-ms=W]
//
// (or --shm-name=NAME for a segment by name). Its segment, store and channel come as descriptors
// it inherits, their names already gone, so that nothing of them outlives the processes.
// It reads its start-up arguments from the SubProcessSync segment, maps the tensor store,
// starts its own actor system, says it started, and runs until the exit flag is set, a Destroy
// arrives or its controller is gone. On the sockets its subscriber runs the batches on the same
// batch runner as thread mode and reports them itself, and the main thread pulses the controller
// every 50 ms while an operator runs (actors/pulse_pusher.hpp). With --channel-fd (the
// shared-memory path), a ring reader takes the batches from the broadcast ring and runs them on the same
// batch runner, publishing its acknowledgements on OBJ's board too, and its main thread beats the
// lane's heartbeat there every 50 ms while an operator runs (and every 250 ms otherwise).
// Exit codes (README.md, "Exit codes"): 0 after an orderly exit, 2 bad command line, 3 start-up
// failed (the reason is left in the segment for the controller), 4 its stream failed to start or
// stopped. It reads no configuration file: not caf-application.ini from whatever directory the
// controller runs in, nor --config-file.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <zmq.hpp>

#include "actorgraph/error.hpp"
#include "apps/app_config.hpp"
#include "actors/node_child.hpp"
#include "actors/operator_mark.hpp"
#include "actors/protocol.hpp"
#include "actors/quiet_pool.hpp"
#include "actors/pulse_pusher.hpp"
#include "actors/pusher.hpp"
#include "actors/ring_reader.hpp"
#include "actors/subscriber.hpp"
#include "cuda/ipc_files.hpp"
#include "ipc/leftovers.hpp"
#include "ipc/shm_channel.hpp"
#include "ipc/sub_process_sync.hpp"
#include "ipc/tensor_store.hpp"
#include "ipc/timeline.hpp"
#include "ipc/wire.hpp"

namespace {

class runner_config : public ag::app::config {
public:
  bool remote_runner = false;
  std::string shm_name;
  int64_t sync_fd = -1;
  int64_t lane = -1; // its lane, as its start-up arguments have it (for ps and the tests)
  std::string runtime; // the runtime it serves, ag-<pid>-actorgraph-<tag> (for ps)
  int64_t channel_fd = -1; // the shared-memory path: the board and the ring; -1: sockets
  size_t channel_bytes = 0;
  int64_t spin_ns = 50000;
  int64_t export_wait_ms = 60000;

  runner_config() : ag::app::config("ag-runner", false) {
    opt_group{custom_options_, "global"}
      .add(remote_runner, "remote-runner", "run as the child of one device (required)")
      .add(shm_name, "shm-name", "the start-up segment the controller created, by name")
      .add(sync_fd, "sync-fd", "the start-up segment, as the descriptor it inherited")
      .add(lane, "lane", "its lane (the start-up arguments must say the same)")
      .add(runtime, "runtime", "the runtime it serves (its name, for ps)")
      .add(channel_fd, "channel-fd",
           "the shared-memory path's object (board and ring), inherited; none: sockets")
      .add(channel_bytes, "channel-bytes", "its size in bytes")
      .add(spin_ns, "spin-ns", "how long a wait on the ring spins before it sleeps")
      .add(export_wait_ms, "export-wait-ms",
           "how long a read of another child's export waits for it");
    ag::quiet_pool(*this);
  }
};

// How often the main thread beats the heartbeat while its runner is inside an operator, and how
// long it sleeps between looks at the exit flag and its parent otherwise (a runner that enters an
// operator wakes it: actors/operator_mark.hpp).
constexpr std::chrono::milliseconds watch_slice{50};
constexpr std::chrono::milliseconds idle_slice{250};

bool parent_alive(pid_t parent) { return ::getppid() == parent; }

int run(runner_config& cfg, ag::sub_process_sync& sync) {
  ag::wire::startup_args args;
  const auto raw = sync.args();
  ag::wire::decode(raw.data(), raw.size(), args);
  if (cfg.lane >= 0 && static_cast<uint32_t>(cfg.lane) != args.lane)
    throw ag::error("--lane=" + std::to_string(cfg.lane) + ", but its start-up arguments are for lane "
                    + std::to_string(args.lane));
  // Die with the controller; and if it is already gone (it died before this line), leave now.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!parent_alive(args.parent_pid))
    throw ag::error("controller (pid " + std::to_string(args.parent_pid) + ") is gone");
  auto store = args.store_fd >= 0
                 ? ag::tensor_store::open_inherited(args.store_fd, args.store_bytes, args.store_name)
                 : ag::tensor_store::open_shared(args.store_name, args.store_bytes);
  std::shared_ptr<ag::shm_channel> channel;
  if (cfg.channel_fd >= 0) {
    channel = std::make_shared<ag::shm_channel>(
      ag::shm_channel::open_inherited(static_cast<int>(cfg.channel_fd), cfg.channel_bytes));
    if (args.lane == 0 || args.lane > channel->ring().readers())
      throw ag::error("lane " + std::to_string(args.lane) + " has no reader in a ring of "
                      + std::to_string(channel->ring().readers()));
  }
  std::shared_ptr<ag::timeline> timeline;
  if (!args.timeline_part.empty()) {
    timeline = std::make_shared<ag::timeline>();
    timeline->name_process(::getpid(), "ag-runner " + args.where.str());
  }
  // The files the CUDA driver makes for this child's interprocess events are named in its segment
  // as they appear, for its proxy to remove should this process be killed (cuda/ipc_files.hpp).
  ag::observe_ipc_files([&sync](const std::vector<std::string>& names) {
    sync.record_driver_files(names);
  });
  int exit_code = 0;
  {
    caf::actor_system sys{cfg};
    // A node's child decrypts each data stream, and encrypts each return stream, in an I/O
    // thread of its own (return stream k beside data stream k).
    auto ctx = std::make_shared<zmq::context_t>(static_cast<int>(
      1 + std::max(args.data_endpoints.size(), args.return_endpoints.size())));
    caf::scoped_actor self{sys};
    // The operator the runner is inside; it wakes this thread from an idle slice.
    ag::operator_mark mark{[main = caf::actor_cast<caf::actor>(self)] {
      caf::anon_send(main, ag::beat_atom::value);
    }};
    // A node's child reaches its controller over TCP with CURVE and trades store bytes with it.
    std::optional<ag::node_child> node;
    if (!args.curve_server_key.empty())
      node = ag::node_child{args.curve_server_key, args.curve_public, args.curve_secret,
                            args.data_endpoints, args.return_endpoints, store.base(),
                            store.size()};
    const bool pin = args.where.type == ag::device::kind::cuda;
    ag::export_wait_policy exports;
    exports.timeout = std::chrono::milliseconds{cfg.export_wait_ms};
    ag::step_policy steps;
    steps.enabled = args.graphs;
    steps.max_graphs = static_cast<std::size_t>(args.max_graphs);
    steps.capture_after = args.graph_after;
    ag::subscriber_setup ss;
    ss.ctx = ctx;
    ss.endpoint = args.pub_endpoint;
    ss.lane = args.lane;
    ss.main = caf::actor_cast<caf::actor>(self);
    ss.node = node;
    ss.generation = args.generation;
    caf::actor stream; // what runs the batches
    caf::actor pusher; // the shared-memory path: what reports
    caf::actor subscriber;
    std::optional<ag::pulse_pusher> pulse; // the sockets: the main thread's sign of a busy runner
    if (channel) { // the ring reader runs the batches; the socket carries the Hellos
      pusher = ag::spawn_pusher(sys, ctx, args.pull_endpoint, args.lane, args.where, nullptr,
                                ag::wire::first_report_id(args.generation));
      ag::ring_reader_setup rs;
      rs.runner = {args.lane, args.where, store.base(), store.size(), pin, timeline,
                   &channel->board()};
      rs.channel = channel;
      rs.reader = args.lane - 1;
      rs.spin = std::chrono::nanoseconds{cfg.spin_ns};
      rs.runner.exports = exports;
      rs.runner.exports.spin = rs.spin;
      rs.runner.steps = steps;
      rs.runner.running = &mark;
      rs.runner.entries_before = args.entries_before;
      stream = ag::spawn_ring_reader(sys, std::move(rs), pusher, caf::actor_cast<caf::actor>(self));
      ss.pusher = pusher;
      subscriber = ag::spawn_subscriber(sys, std::move(ss));
    } else { // the subscriber runs the batches and reports itself
      ag::batch_runner_setup rs{args.lane, args.where, store.base(), store.size(), pin, timeline};
      rs.exports = exports;
      rs.steps = steps;
      rs.running = &mark;
      rs.entries_before = args.entries_before;
      pulse.emplace(*ctx, args.pull_endpoint, args.lane, mark, node);
      ss.runner = std::move(rs);
      ss.pull_endpoint = args.pull_endpoint;
      stream = subscriber = ag::spawn_subscriber(sys, std::move(ss));
    }
    self->monitor(stream);
    sync.notify_started();
    bool running = true;
    while (running) {
      self->receive(
        [&](ag::destroy_atom) { running = false; },
        [&](ag::beat_atom) {}, // the runner entered an operator: beat now
        [&](caf::down_msg& dm) {
          std::string why = dm.reason ? ag::describe(dm.reason, args.where.str()) : "stopped";
          sync.report_error(why);
          std::fprintf(stderr, "ag-runner %s: %s\n", args.where.str().c_str(), why.c_str());
          exit_code = ag::app::exit_stream_failed;
          running = false;
        },
        caf::after(mark.doze() ? idle_slice : watch_slice) >> [] {});
      mark.awake();
      // A sign of life on its own thread: the ring reader may spend seconds inside one operator,
      // reading nothing, and the watchdog must tell it from a child that is stopped.
      // On the sockets the controller hears it as a Pulse, and only while an operator runs.
      if (channel)
        channel->board().beat(args.lane);
      else
        pulse->look();
      if (running && (sync.wait_for_exit(std::chrono::milliseconds{0})
                      || !parent_alive(args.parent_pid)))
        running = false;
    }
    for (auto& a : {subscriber, stream, pusher})
      if (a)
        self->send_exit(a, caf::exit_reason::user_shutdown);
    for (auto& a : {subscriber, stream, pusher}) // they use the mark until they are gone
      if (a)
        self->wait_for(a);
  } // the actor system waits for its actors; the pusher's linger lets last messages out
  // Its streams destroyed their events: whatever file of theirs the driver left goes now.
  ag::observe_ipc_files({});
  ag::remove_cuda_ipc_files(ag::own_ipc_files());
  if (timeline) { // the controller merges it once this process has exited
    try {
      timeline->write_part(args.timeline_part);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ag-runner %s: %s\n", args.where.str().c_str(), e.what());
    }
  }
  return exit_code;
}

int start(int argc, char** argv) {
  runner_config cfg;
  if (auto code = cfg.read(argc, argv))
    return *code;
  if (!cfg.remainder.empty())
    return cfg.usage("unexpected argument \"" + cfg.remainder.front() + "\"");
  if (!cfg.remote_runner || (cfg.shm_name.empty() && cfg.sync_fd < 0))
    return cfg.usage("started by an actorgraph runtime in process mode, as "
                     "ag-runner --remote-runner --sync-fd=FD (or --shm-name=NAME)");
  if (cfg.spin_ns < 0)
    return cfg.usage("--spin-ns=" + std::to_string(cfg.spin_ns) + ": expected 0 or more");
  if (cfg.export_wait_ms <= 0)
    return cfg.usage("--export-wait-ms=" + std::to_string(cfg.export_wait_ms)
                     + ": expected 1 or more");
  ag::sub_process_sync sync;
  try {
    sync = cfg.sync_fd >= 0 ? ag::sub_process_sync::open_inherited(static_cast<int>(cfg.sync_fd))
                            : ag::sub_process_sync::open(cfg.shm_name);
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_cannot_run, e.what());
  }
  try {
    return run(cfg, sync);
  } catch (const std::exception& e) {
    sync.report_error(e.what());
    return cfg.fail(ag::app::exit_cannot_run, e.what());
  }
}

} // namespace

int main(int argc, char** argv) {
  return ag::app::guarded_main("ag-runner", start, argc, argv, ag::app::exit_cannot_run);
}
