// pusher: a child's PUSH socket (the seed's RemoteRunnerPusher). Takes the stream actor's
// reports (ready, done, failed) and sends them to the controller with consecutive ids (from
// first_id: wire::first_report_id of the child's generation). Sends
// devicesReady only once both the stream exists and the subscriber has heard a Hello, so no
// broadcast can be lost to a slow join. Detached: it owns a socket. A node's child's pusher also
// takes (publish, ops_after, ranges) from the subscriber: once the lane's Done reaches ops_after,
// it sends those store ranges to the controller (Data-out) right before that Done.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"

namespace zmq {
class context_t;
} // namespace zmq

namespace ag {

struct node_child;

caf::actor spawn_pusher(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                        std::string endpoint, uint32_t lane, device where,
                        const node_child* node = nullptr, uint64_t first_id = 1);

} // namespace ag
