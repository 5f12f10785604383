// publisher: the controller's PUB socket (the seed's RemoteRunnerPublisher with its
// PublishMessageIdManager). Broadcasts Execute (the batches of every child in one message) and
// Destroy, each with the next message id; during start-up it also broadcasts a Hello every few
// milliseconds, so that a child knows when its SUB connection is up. Encoding happens here, off the
// executor's thread. With a trace writer, every frame is recorded before it is sent. Detached: it
// owns a socket.
//
//   (publish, wire::execute_msg)   encodes and sends an Execute
//   (publish, std::vector<char>)   sends an already encoded Execute body (ag-replay)
//   (ready)                        no more Hellos;  (destroy) sends Destroy
#pragma once

#include <memory>
#include <string>

#include <caf/fwd.hpp>

namespace zmq {
class context_t;
} // namespace zmq

namespace ag {

namespace trace {
class writer;
} // namespace trace

caf::actor spawn_publisher(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                           std::string endpoint, std::shared_ptr<trace::writer> trace = nullptr);

} // namespace ag
