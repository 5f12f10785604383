#include "actors/lane_topology.hpp"

#include <caf/all.hpp>

#include "actors/process_env.hpp"
#include "actors/protocol.hpp"
#include "actors/puller.hpp"
#include "actors/runner_proxy.hpp"
#include "actors/socket_publisher.hpp"
#include "actors/stream_actor.hpp"
#include "cuda/peer_directory.hpp"
#include "ipc/ring_publisher.hpp"
#include "ipc/shm_channel.hpp"
#include "actorgraph/error.hpp"
#include "ipc/trace.hpp"

namespace ag {

namespace {

// Sends as the owner, whichever kind of actor it is (event-based or blocking).
template <class Handle, class... Ts>
void send_from(caf::local_actor* owner, const Handle& to, Ts&&... xs) {
  caf::send_as(caf::actor_cast<caf::actor>(owner), to, std::forward<Ts>(xs)...);
}

} // namespace

lane_topology::~lane_topology() = default;

lane_topology::lane_topology(caf::local_actor* owner, topology_setup setup) : owner_(owner) {
  try {
    spawn(setup);
  } catch (...) { // what did start stops; nothing is left running
    for (auto& a : actors())
      owner->send_exit(a, caf::exit_reason::kill);
    throw;
  }
}

void lane_topology::spawn(topology_setup& setup) {
  trace_ = setup.trace;
  auto* owner = owner_;
  auto& sys = owner->home_system();
  const auto me = caf::actor_cast<caf::actor>(owner);
  if (setup.process) {
    auto& p = *setup.process;
    // The children publish on the channel's board themselves; on the sockets the puller does.
    completion_board* pulled_to = setup.board;
    if (p.channel) {
      ring_ = std::make_shared<ring_publisher>(p.channel, setup.trace);
      setup.board = &p.channel->board();
      pulled_to = nullptr;
    }
    publisher_ = std::make_unique<socket_publisher>(p.zmq, p.pub_endpoint, setup.trace, ring_,
                                                    p.network, setup.store_base,
                                                    setup.store_size);
    puller_ = spawn_puller(sys, p.zmq, p.pull_endpoint, me, p.network, setup.store_base,
                           setup.store_size, pulled_to, setup.timeline);
    owner->monitor(puller_);
    spawned_->push_back(puller_);
  }
  // The children on nodes were started by their nodes (actors/node_client.hpp).
  const auto* net = setup.process && setup.process->network ? setup.process->network.get() : nullptr;
  if (net)
    node_actors_ = net->lane_node_actor;
  const auto peers =
    setup.peers ? std::make_shared<peer_directory>(setup.devices.size()) : nullptr;
  for (uint32_t i = 0; i < setup.devices.size(); ++i) {
    const auto& dev = setup.devices[i];
    lane_actor l;
    l.remote = setup.process && !dev.is_cpu();
    if (net && i < net->lane_proxy.size() && net->lane_proxy[i]) {
      l.proxy = caf::actor_cast<runner_proxy_actor>(net->lane_proxy[i]);
    } else if (l.remote) {
      auto ps = make_proxy_setup(*setup.process, i, dev, setup.store_size, setup.start_timeout,
                                 setup.stop_timeout);
      if (setup.timeline)
        ps.args.timeline_part = timeline_part(*setup.process, i);
      ps.args.graphs = setup.steps.enabled;
      ps.args.max_graphs = setup.steps.max_graphs;
      ps.args.graph_after = setup.steps.capture_after;
      if (setup.trace)
        setup.trace->write(trace::startup_rec{i, ps.args});
      l.setup = std::make_shared<const proxy_setup>(ps);
      l.proxy = spawn_runner_proxy(sys, std::move(ps));
    } else {
      l.stream = spawn_stream_actor(sys, caf::actor_cast<runner_answers_actor>(owner), i, dev,
                                    setup.store_base, setup.store_size,
                                    dev.type == device::kind::cuda, setup.timeline,
                                    setup.board, setup.linger,
                                    dev.is_cpu() ? nullptr : peers, setup.exports,
                                    setup.streams, dev.is_cpu() ? step_policy{} : setup.steps);
    }
    owner->monitor(l.runner());
    spawned_->push_back(l.runner());
    lanes_.push_back(std::move(l));
  }
}

void lane_topology::restart(uint32_t l, uint32_t generation, uint64_t entries_before) {
  auto& lane = lanes_.at(l);
  if (!lane.setup)
    throw error("lane " + std::to_string(l) + ": its child cannot be started again here");
  auto ps = *lane.setup;
  ps.args.generation = generation;
  ps.args.entries_before = entries_before;
  if (trace_)
    trace_->write(trace::startup_rec{l, ps.args});
  if (ring_)
    ring_->rejoin(l - 1); // before the child can read
  adopt(l, spawn_runner_proxy(owner_->home_system(), std::move(ps)));
}

caf::actor lane_topology::node_of(uint32_t l) const {
  return l < node_actors_.size() ? node_actors_[l] : caf::actor{};
}

void lane_topology::adopt(uint32_t l, runner_proxy_actor proxy) {
  auto& lane = lanes_.at(l);
  lane.proxy = std::move(proxy);
  lane.down = false;
  owner_->monitor(lane.runner());
  spawned_->push_back(lane.runner());
  if (publisher_)
    publisher_->restarted(l);
}

caf::actor lane_topology::lane_actor::runner() const {
  return remote ? caf::actor_cast<caf::actor>(proxy) : caf::actor_cast<caf::actor>(stream);
}

std::vector<caf::actor> lane_topology::actors() const { return *spawned_; }

bool lane_topology::publish(wire::execute_msg& m) {
  return publisher_->execute(wire::encode(m), &m);
}

bool lane_topology::publish(wire::bytes encoded) { return publisher_->execute(std::move(encoded)); }

bool lane_topology::say_hello() { return publisher_ && publisher_->hello(); }

std::chrono::steady_clock::time_point lane_topology::tend() {
  const auto now = std::chrono::steady_clock::now();
  auto next = std::chrono::steady_clock::time_point::max();
  if (say_hello())
    next = now + hello_period;
  if (ring_ && !ring_->flush())
    next = std::min(next, now + std::chrono::milliseconds{1});
  return next;
}

lane_topology::down_event lane_topology::on_down(const caf::down_msg& dm) {
  if (puller_ && puller_.address() == dm.source) {
    ++services_down_;
    return {down_kind::service, 0};
  }
  for (uint32_t l = 0; l < lanes_.size(); ++l)
    if (lanes_[l].runner().address() == dm.source && !lanes_[l].down) {
      lanes_[l].down = true;
      return {down_kind::lane, l};
    }
  return {};
}

bool lane_topology::lanes_down() const {
  for (const auto& l : lanes_)
    if (!l.down)
      return false;
  return true;
}

void lane_topology::started() {
  if (publisher_)
    publisher_->started(); // no more Hellos
}

void lane_topology::stop_lanes() {
  if (publisher_) {
    try {
      publisher_->destroy();
    } catch (const std::exception&) { // the children are stopped through their proxies too
    }
  }
  for (const auto& l : lanes_) {
    if (l.down)
      continue;
    if (l.remote) // sets the exit flag, waits for the child (deadline, then SIGKILL)
      send_from(owner_, l.proxy, shutdown_atom::value);
    else
      owner_->send_exit(l.stream, caf::exit_reason::user_shutdown);
  }
}

void lane_topology::kill_lanes() {
  for (const auto& l : lanes_)
    if (!l.down)
      owner_->send_exit(l.runner(), caf::exit_reason::kill);
}

void lane_topology::stop_services() {
  publisher_.reset();
  if (puller_)
    owner_->send_exit(puller_, caf::exit_reason::user_shutdown);
}

} // namespace ag
