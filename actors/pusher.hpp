// pusher: a child's PUSH socket (the seed's RemoteRunnerPusher). Takes the stream actor's
// reports (ready, done, failed) and sends them to the controller with consecutive ids. Sends
// devicesReady only once both the stream exists and the subscriber has heard a Hello, so no
// broadcast can be lost to a slow join. Detached: it owns a socket.
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

caf::actor spawn_pusher(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                        std::string endpoint, uint32_t lane, device where);

} // namespace ag
