// lane_topology: the actors behind a controller's lanes, spawned, monitored and stopped in one
// way for the executor and for ag-replay. Lane 0 (the cpu) and, in thread mode, every device lane
// is a stream actor; in process mode each device lane is the runner proxy of a child, and a
// publisher and a puller carry the broadcasts and the children's answers. The owner (the executor,
// or ag-replay's scoped actor) monitors each, and is who the runners and the puller report to.
//
// Shutdown runs in order: the publisher broadcasts Destroy and every lane's runner is told to stop
// (a child exits, or is killed at its deadline); once every lane is down, the publisher and the
// puller stop, since the children's last words pass through them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <caf/actor.hpp>
#include <caf/typed_actor.hpp>
#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"
#include "cuda/export_wait.hpp"
#include "actors/process_setup.hpp"
#include "actors/protocol.hpp"
#include "actors/runner_proxy.hpp"
#include "actors/step_policy.hpp"
#include "ipc/wire.hpp"

namespace ag {

class completion_board;
class lane_streams;
class ring_publisher;
class socket_publisher;
class timeline;

namespace trace {
class writer;
} // namespace trace

struct topology_setup {
  std::vector<device> devices; // lane 0 is the cpu
  std::byte* store_base = nullptr;
  std::size_t store_size = 0;
  std::optional<process_setup> process; // empty: every lane in this process
  std::chrono::milliseconds start_timeout{60000}; // a child's start-up handshake
  std::chrono::milliseconds stop_timeout{60000};  // a child's exit at shutdown
  std::shared_ptr<trace::writer> trace;  // records each child's start-up arguments; and frames
  std::shared_ptr<ag::timeline> timeline; // stream actors' spans; each child writes a part
  // Where this process's runners publish their acknowledgements too (null: nowhere); in process
  // mode with a channel, the channel's board.
  completion_board* board = nullptr;
  // How long this process's stream actors watch their mailboxes once idle (0: not at all).
  std::chrono::nanoseconds linger{0};
  // The device lanes in this process run direct transfers (peer_copy, peer_sum): their runners
  // share a peer_directory.
  bool peers = false;
  // How their reads of each other's exports wait (graph_option::spin_wait, wait_timeout).
  export_wait_policy exports;
  // Where this process's runners add their streams (tensor::device_bytes); null: nowhere.
  std::shared_ptr<lane_streams> streams;
  // Steps as graphs, on the device lanes (the cpu lane runs its steps operator by operator).
  step_policy steps;
};

class lane_topology {
public:
  // What a down message was about.
  enum class down_kind { lane, service, other };
  struct down_event {
    down_kind kind = down_kind::other;
    uint32_t lane = 0;
  };

  // Makes the broadcast (process mode: a socket_publisher the owner's thread writes), spawns the
  // puller (process mode) and every lane's runner, each monitored by owner.
  lane_topology(caf::local_actor* owner, topology_setup setup);
  ~lane_topology();

  std::size_t lanes() const noexcept { return lanes_.size(); }
  bool remote(uint32_t l) const { return lanes_.at(l).remote; }
  // The runner of a lane in this process, and the proxy of a remote lane's child.
  const stream_actor& stream(uint32_t l) const { return lanes_.at(l).stream; }
  const runner_proxy_actor& proxy(uint32_t l) const { return lanes_.at(l).proxy; }
  // Broadcasts an Execute to the children (process mode), on the owner's thread: false when it
  // waits on the ring for room (flush the ring later). Throws ag::error when it cannot be sent.
  bool publish(wire::execute_msg& m);
  bool publish(wire::bytes encoded); // an Execute already encoded (ag-replay)
  // During start-up, every hello_period: a Hello; false once started (call no more).
  static constexpr std::chrono::milliseconds hello_period{2};
  bool say_hello();
  // For an owner that takes its messages in a receive loop (ag-replay): says a Hello while
  // start-up lasts and flushes frames waiting on the ring for room; by when to call it again
  // (time_point::max(): nothing waits).
  std::chrono::steady_clock::time_point tend();
  // The broadcast ring's writer on the shared-memory path (null on the socket path).
  const std::shared_ptr<ring_publisher>& ring() const noexcept { return ring_; }
  // Every actor it spawned (to stop them should the owner end unexpectedly), and the list it
  // keeps of them, which grows with each restart.
  std::vector<caf::actor> actors() const;
  std::shared_ptr<const std::vector<caf::actor>> spawned() const noexcept { return spawned_; }

  // Starts a new child for remote lane l of this machine, whose proxy is down: its
  // `generation`-th, its count of entries going on from entries_before; it reads the ring from
  // what is written next. Throws ag::error for a node's lane (its node starts it: node_of(l)).
  void restart(uint32_t l, uint32_t generation, uint64_t entries_before);
  // The actor of the node that runs lane l; null for a lane of this machine.
  caf::actor node_of(uint32_t l) const;
  // Lane l's new child, started by its node: its proxy, monitored by the owner. Hellos go out
  // again until it is ready (started() ends them), and its Data-in pieces count from 1.
  void adopt(uint32_t l, runner_proxy_actor proxy);

  // Marks what went down.
  down_event on_down(const caf::down_msg& dm);
  bool lanes_down() const;
  bool services_down() const { return services_down_ == (puller_ ? 1 : 0); }

  // Start-up is over: no more Hellos.
  void started();
  // The first step of shutdown: Destroy broadcast (on the ring it may wait for room: flush the
  // ring until it is out), every lane's runner told to stop.
  void stop_lanes();
  // Kills the runners of lanes not down yet (ag-replay, past its deadline).
  void kill_lanes();
  // Closes the broadcast and stops the puller (once every lane is down: the children's last
  // words pass through it).
  void stop_services();

private:
  struct lane_actor {
    stream_actor stream;      // or
    runner_proxy_actor proxy; // (remote)
    caf::actor runner() const;
    bool remote = false;
    bool down = false;
    std::shared_ptr<const proxy_setup> setup; // how its child was started (a local child)
  };
  void spawn(topology_setup& setup);

  caf::local_actor* owner_;
  std::vector<lane_actor> lanes_;
  std::shared_ptr<ring_publisher> ring_;
  std::unique_ptr<socket_publisher> publisher_;
  caf::actor puller_;
  int services_down_ = 0;
  std::shared_ptr<std::vector<caf::actor>> spawned_ = std::make_shared<std::vector<caf::actor>>();
  std::shared_ptr<trace::writer> trace_;
  std::vector<caf::actor> node_actors_; // per lane (null: a lane of this machine)
};

} // namespace ag
