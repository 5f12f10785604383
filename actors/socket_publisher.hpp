// socket_publisher: the controller's broadcast (the seed's RemoteRunnerPublisher with its
// PublishMessageIdManager), written by the thread that owns the lane topology (the executor, or
// ag-replay) itself: no actor hop between a dispatched batch and its frame. Execute (the batches
// of every child in one message) and Destroy go out with the next message id; during start-up
// the owner calls hello() every few milliseconds, so that a child knows when its SUB connection
// (and each data stream's) is up. With a trace writer, every frame is recorded before it is sent.
// With a ring publisher (the shared-memory path), Execute and Destroy go on the ring instead (ids
// from the ring's sequence, the Hellos' too), a frame that finds no room waiting in the ring
// publisher's queue until the owner flushes it. With nodes, every frame also goes out on the TCP
// socket the node's children subscribe to, each Execute preceded by the store bytes that a node
// lane's batch in it reads (Data-in, per lane, in order) and a Data-sent naming the last piece.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "actors/subscription_gate.hpp"
#include "ipc/wire.hpp"

namespace ag {

class ring_publisher;
struct network_setup;
namespace trace {
class writer;
}

class socket_publisher {
public:
  // Binds the local PUB at `endpoint` (throws ag::error naming it when it cannot) and takes the
  // nodes' sockets from `network`.
  socket_publisher(std::shared_ptr<zmq::context_t> ctx, const std::string& endpoint,
                   std::shared_ptr<trace::writer> trace, std::shared_ptr<ring_publisher> ring,
                   std::shared_ptr<network_setup> network, const std::byte* store_base,
                   std::size_t store_size);

  // An Execute; `msg`: its batches when they are at hand (else decoded from `body` if needed).
  // False when it waits on the ring for room (flush the ring later). Throws ag::error when a
  // node lane's batch reads beyond the store.
  bool execute(wire::bytes body, const wire::execute_msg* msg = nullptr);
  // A Hello, while start-up lasts; false once started() (nothing sent). The nodes' subscriptions
  // that wait are admitted first (subscription_gate).
  bool hello();
  void started() noexcept { saying_hello_ = false; }
  // The child of `lane` was started again: its Data-in pieces count from 1 again, and Hellos go
  // out until started() once more.
  void restarted(uint32_t lane) noexcept;
  // The Destroy: every child exits. False when it waits on the ring.
  bool destroy();

private:
  bool publish(wire::msg_type type, wire::bytes body, const wire::execute_msg* msg);
  void send_node_reads(const wire::bytes& body, const wire::execute_msg* msg);

  std::shared_ptr<zmq::context_t> ctx_; // outlives the sockets below
  std::optional<zmq::socket_t> sock_;
  std::shared_ptr<trace::writer> trace_;
  std::shared_ptr<ring_publisher> ring_;
  uint64_t next_id_ = 1;
  bool saying_hello_ = true;
  // With nodes: their children's socket, the data streams (none: `net_` carries the pieces),
  // where pieces go, each lane's Data-in sequence, and the store the bytes come from.
  std::shared_ptr<network_setup> network_;
  std::optional<zmq::socket_t> net_;
  std::vector<zmq::socket_t> data_;
  std::vector<zmq::socket_t*> carriers_;
  std::vector<uint64_t> data_ids_;
  std::optional<subscription_gate> gate_; // who may subscribe to what on the nodes' sockets
  const std::byte* store_base_ = nullptr;
  std::size_t store_size_ = 0;
};

} // namespace ag
