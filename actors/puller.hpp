// puller: the controller's PULL socket (the seed's RemoteRunnerPuller). Decodes what the children
// push (ready, done, failed) and hands it to the executor as the same messages a thread-mode
// stream actor sends; a malformed frame or a gap in a child's message ids becomes a failure with
// the reason. Detached: it blocks in a poll of its socket. With nodes it also owns the TCP PULL
// socket their children push to: a message there must come from the node of the lane it speaks
// for (its CURVE identity, as the ZAP handler named it), and the store bytes a node lane's batch
// wrote (Data-out) are copied into the controller's store as they come, before that batch's Done.
// With a board (the children on the sockets), it also publishes each Done and Failed there for
// the user's waiting threads, before it hands them to the executor: a wait does not go through
// the executor's mailbox. With a timeline, each Done and Failed it takes is an instant on its track
// ("puller"): where a round trip's acknowledgement reached the controller.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

namespace zmq {
class context_t;
} // namespace zmq

namespace ag {

class completion_board;
class timeline;
struct network_setup;

// The puller's track on the controller's timeline.
constexpr int puller_track = 1000;

caf::actor spawn_puller(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                        std::string endpoint, caf::actor executor,
                        std::shared_ptr<network_setup> network = nullptr,
                        std::byte* store_base = nullptr, std::size_t store_size = 0,
                        completion_board* board = nullptr,
                        std::shared_ptr<timeline> timeline = nullptr);

} // namespace ag
