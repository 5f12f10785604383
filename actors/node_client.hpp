// node_client: the controller's side of node_protocol.hpp. Connects to each node's ag-node through
// the middleman's TLS and asks it for the children of that node's lanes, each step by a deadline,
// so that a node that does not answer (stopped, unreachable, not an ag-node) fails start-up with
// an error naming it instead of hanging. Each node was probed first (node_probe.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>
#include <caf/typed_actor.hpp>

#include "actorgraph/device.hpp"
#include "actors/process_setup.hpp"
#include "actors/protocol.hpp"
#include "actors/step_policy.hpp"

namespace ag {

// Probes node `n` (node_probe.hpp) by the deadline given, throwing ag::error naming it when it
// does not answer.
using node_reprobe = std::function<void(const network_setup::node_target& n,
                                        std::chrono::steady_clock::time_point deadline)>;

// The proxies of every node lane of `devices` (lane = index), spawned on their nodes, monitored
// by nobody yet. `owner` is who the nodes serve: they stop the children once it is gone. A node
// whose connection the middleman drops unanswered is tried again (3 times at most, each within
// start_timeout), each time after `reprobe`. Throws ag::error naming the node; the nodes that did
// start children keep them until owner is gone. No connection of a failed attempt is left open.
// A node lane's child, as its node started it: its proxy, and the node's actor.
struct node_lane {
  runner_proxy_actor proxy;
  caf::actor node;
};

std::map<uint32_t, node_lane>
start_node_lanes(caf::actor_system& sys, const caf::actor& owner, const network_setup& net,
                 const std::vector<device>& devices, uint64_t store_bytes,
                 std::chrono::milliseconds start_timeout, std::chrono::milliseconds stop_timeout,
                 const node_reprobe& reprobe, const step_policy& steps,
                 uint32_t max_restarts = 0);

// The address of this machine that packets to HOST:PORT leave from (a UDP socket's route, no
// packet sent). Throws ag::error naming HOST when it has no IPv4 route.
std::string local_address_towards(const std::string& host, uint16_t port);

} // namespace ag
