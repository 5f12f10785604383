// publisher: the controller's PUB socket (the seed's RemoteRunnerPublisher with its
// PublishMessageIdManager). Broadcasts Execute (the batches of every child in one message) and
// Destroy, each with the next message id; during start-up it also broadcasts a Hello every few
// milliseconds, so that a child knows when its SUB connection is up. Encoding happens here, off the
// executor's thread. With a trace writer, every frame is recorded before it is sent. Detached: it
// owns a socket. With a ring publisher (the shared-memory path), Execute and Destroy go on the
// ring instead (ids from the ring's sequence, Hellos' too); a frame that finds no room waits in
// the ring publisher's queue, which it retries every millisecond until it is empty. With nodes,
// every frame also goes out on the TCP socket the node's children subscribe to, each Execute
// preceded by the store bytes that a node lane's batch in it reads (Data-in, per lane, in order).
//
//   (publish, wire::execute_msg)   encodes and sends an Execute
//   (publish, std::vector<char>)   sends an already encoded Execute body (ag-replay)
//   (ready)                        no more Hellos;  (destroy) sends Destroy
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

namespace zmq {
class context_t;
} // namespace zmq

namespace ag {

class ring_publisher;
struct network_setup;

namespace trace {
class writer;
} // namespace trace

caf::actor spawn_publisher(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                           std::string endpoint, std::shared_ptr<trace::writer> trace = nullptr,
                           std::shared_ptr<ring_publisher> ring = nullptr,
                           std::shared_ptr<network_setup> network = nullptr,
                           const std::byte* store_base = nullptr, std::size_t store_size = 0);

} // namespace ag
