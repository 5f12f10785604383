// puller: the controller's PULL socket (the seed's RemoteRunnerPuller). Decodes what the children
// push (ready, done, failed) and hands it to the executor as the same messages a thread-mode
// stream actor sends; a malformed frame or a gap in a child's message ids becomes a failure with
// the reason. Detached: it blocks in a poll of its socket.
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>

namespace zmq {
class context_t;
} // namespace zmq

namespace ag {

caf::actor spawn_puller(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                        std::string endpoint, caf::actor executor);

} // namespace ag
