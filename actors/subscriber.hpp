// subscriber: a child's SUB socket (the seed's RemoteRunnerSubscriber). Checks that message ids
// follow each other (a gap is reported as a failure, and nothing after it runs), hands the batch
// of its own lane to the stream actor, tells the pusher it heard a Hello, and the child's main
// thread when a Destroy arrives. Detached: it blocks in a poll of its socket. Without a stream
// actor (a child on the shared-memory path, whose ring reader runs the batches), the socket
// carries Hellos and nothing else runs from it, and ids need only grow. A node's child (with a
// node_child) subscribes over TCP to the frames of every child and its own lane's Data-in, whose
// bytes it copies into its store before it hands on the Execute after them; and it tells the
// pusher which store ranges each batch of its lane will write, to be sent back before the Done.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

namespace zmq {
class context_t;
} // namespace zmq

namespace ag {

struct node_child;

caf::actor spawn_subscriber(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                            std::string endpoint, uint32_t lane, caf::actor stream,
                            caf::actor pusher, caf::actor main,
                            const node_child* node = nullptr);

} // namespace ag
