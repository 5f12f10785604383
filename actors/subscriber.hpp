// subscriber: a child's SUB socket (the seed's RemoteRunnerSubscriber). Checks that message ids
// follow each other (a gap is reported as a failure, and nothing after it runs) and tells the
// child's main thread when a Destroy arrives. Detached: it blocks in a poll of its socket.
// - On the sockets it is the child's runner too: it runs its own lane's batches there and then,
//   on the batch runner, synchronizing once nothing more waits on the socket, and reports (Ready
//   once a Hello was heard, Done, Failed, Received) on a PUSH socket of its own (report_pusher):
//   no actor hop between a batch's arrival and its launch, or its end and its Done.
// - On the shared-memory path the ring reader runs the batches: the socket carries Hellos and
//   nothing else runs from it, ids need only grow, and the pusher actor hears of the Hello.
// A node's child (with a node_child) subscribes over TCP to the frames of every child and its own
// lane's Data-in, whose bytes it copies into its store before it runs the Execute after them; the
// store ranges each batch of its lane writes go back before its Done (Data-out).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/batch_runner.hpp"
#include "actors/node_child.hpp"

namespace zmq {
class context_t;
} // namespace zmq

namespace ag {

struct subscriber_setup {
  std::shared_ptr<zmq::context_t> ctx;
  std::string endpoint; // the controller's broadcast
  uint32_t lane = 0;
  caf::actor main;      // told of a Destroy
  std::optional<node_child> node;
  // The shared-memory path: the pusher actor, told of the first Hello and of protocol errors.
  caf::actor pusher;
  // The sockets: the runner of the lane's batches, and where it reports (the controller's PULL).
  std::optional<batch_runner_setup> runner;
  std::string pull_endpoint;
  // Which child of its lane this is (wire::startup_args::generation). A child started in place of
  // a dead one joins a broadcast already under way: what comes before its first Hello is not for
  // it, and its reports' ids start at wire::first_report_id(generation).
  uint32_t generation = 0;
};

caf::actor spawn_subscriber(caf::actor_system& sys, subscriber_setup setup);

} // namespace ag
