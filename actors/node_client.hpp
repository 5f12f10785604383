// node_client: the controller's side of node_protocol.hpp. Connects to each node's ag-node through
// the middleman's TLS and asks it for the children of that node's lanes, each step by a deadline,
// so that a node that does not answer (stopped, unreachable, not an ag-node) fails start-up with
// an error naming it instead of hanging.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"
#include "actors/process_setup.hpp"
#include "actors/protocol.hpp"

namespace ag {

// The proxies of every node lane of `devices` (lane = index), spawned on their nodes, monitored
// by nobody yet. `owner` is who the nodes serve: they stop the children once it is gone. Throws
// ag::error naming the node; the nodes that did start children keep them until owner is gone.
std::map<uint32_t, runner_proxy_actor>
start_node_lanes(caf::actor_system& sys, const caf::actor& owner, const network_setup& net,
                 const std::vector<device>& devices, uint64_t store_bytes,
                 std::chrono::milliseconds start_timeout, std::chrono::milliseconds stop_timeout);

// The address of this machine that packets to HOST:PORT leave from (a UDP socket's route, no
// packet sent). Throws ag::error naming HOST when it has no IPv4 route.
std::string local_address_towards(const std::string& host, uint16_t port);

} // namespace ag
