#include "actors/subscriber.hpp"

#include <chrono>
#include <cstring>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/node_child.hpp"
#include "actors/poll_loop.hpp"
#include "actors/protocol.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

struct subscriber_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the socket below
  std::optional<zmq::socket_t> sock;
  uint32_t lane = 0;
  caf::actor stream;
  caf::actor pusher;
  caf::actor main;
  uint64_t last_id = 0; // 0: nothing heard yet
  uint64_t executes = 0; // Execute messages read
  uint64_t executes_reported = 0;
  std::chrono::steady_clock::time_point reported_at{}; // when `received` last went out

  // How far this child has read, for the controller's bound on what it queues and its progress
  // watchdog: once per drain, and within a drain at least every 20 ms, so that a child that is
  // slow to decode still shows that it reads.
  void report(caf::event_based_actor* self, bool drain_over) {
    if (executes == executes_reported)
      return;
    const auto now = std::chrono::steady_clock::now();
    if (!drain_over && now - reported_at < std::chrono::milliseconds{20})
      return;
    executes_reported = executes;
    reported_at = now;
    self->send(pusher, received_atom::value, executes);
  }
  bool broken = false;  // after a protocol error nothing more is run
  // A node's child: its store, and the last Data-in id of its lane (their own sequence).
  std::optional<node_child> node;
  uint64_t last_data_id = 0;

  static inline const char* name = "ag.subscriber";
};

using subscriber_actor = caf::stateful_actor<subscriber_state>;

// Data-in: bytes of the store the lane's next batches read, copied in before they run.
void take_data(subscriber_state& st, zmqs::received& r) {
  if (!st.node)
    throw error("wire: data_in to a child that is not on a node");
  if (r.head.lane != st.lane)
    throw error("wire: data_in of lane " + std::to_string(r.head.lane) + " to the child of lane "
                + std::to_string(st.lane));
  if (r.head.id != st.last_data_id + 1)
    throw error("wire: data_in gap: expected id " + std::to_string(st.last_data_id + 1) + ", got "
                + std::to_string(r.head.id));
  st.last_data_id = r.head.id;
  const auto piece = wire::decode_data(r.body.data(), r.body.size());
  if (piece.offset > st.node->store_size || piece.size > st.node->store_size - piece.offset)
    throw error("wire: data_in to store range [" + std::to_string(piece.offset) + ", +"
                + std::to_string(piece.size) + ") beyond the "
                + std::to_string(st.node->store_size) + "-byte store");
  if (piece.size > 0)
    std::memcpy(st.node->store_base + piece.offset, piece.bytes, piece.size);
}

void handle(subscriber_actor* self, zmqs::received& r) {
  auto& st = self->state;
  if (st.broken) { // after a protocol error only Destroy is still honoured
    if (r.head.type == wire::msg_type::destroy)
      self->send(st.main, destroy_atom::value);
    return;
  }
  if (r.head.type == wire::msg_type::data_in) {
    take_data(st, r);
    return;
  }
  // A child may join after the first Hellos: the first message it hears must be a Hello, and from
  // then on every id is the last one plus one.
  if (st.last_id == 0 && r.head.type != wire::msg_type::hello)
    throw error("wire: first message heard is " + wire::to_string(r.head.type) + " #"
                + std::to_string(r.head.id) + ", not a hello");
  // On the shared-memory path the ring carries the frames between the socket's: ids only grow.
  const bool ring = !st.stream;
  if (st.last_id != 0 && (ring ? r.head.id <= st.last_id : r.head.id != st.last_id + 1))
    throw error("wire: message gap: expected id " + std::string{ring ? "after " : ""}
                + std::to_string(st.last_id + (ring ? 0 : 1)) + ", got "
                + std::to_string(r.head.id) + " (" + wire::to_string(r.head.type) + ")");
  st.last_id = r.head.id;
  switch (r.head.type) {
    case wire::msg_type::hello:
      self->send(st.pusher, hello_atom::value);
      return;
    case wire::msg_type::execute: {
      if (ring)
        throw error("wire: an Execute frame on the socket of a child that reads the ring");
      ++st.executes; // read: counted before it is decoded
      st.report(self, false);
      wire::execute_msg m;
      wire::decode(r.body.data(), r.body.size(), m);
      for (auto& b : m.batches)
        if (b.lane == st.lane) {
          if (st.node) // what the batch writes to the store goes back before its Done
            if (auto writes = host_writes(b); !writes.empty()) {
              std::vector<uint64_t> ranges;
              for (const auto& w : writes)
                ranges.insert(ranges.end(), {w.offset, w.bytes});
              self->send(st.pusher, publish_atom::value, b.ops_after(), std::move(ranges));
            }
          self->send(st.stream, execute_atom::value, std::move(b));
        }
      return;
    }
    case wire::msg_type::destroy:
      self->send(st.main, destroy_atom::value);
      return;
    default:
      throw error("wire: the controller sent " + wire::to_string(r.head.type)
                  + ", which only children send");
  }
}

caf::behavior subscriber(subscriber_actor* self, std::shared_ptr<zmq::context_t> ctx,
                         const std::string& endpoint, uint32_t lane, caf::actor stream,
                         caf::actor pusher, caf::actor main, std::optional<node_child> node) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.lane = lane;
  st.stream = std::move(stream);
  st.pusher = std::move(pusher);
  st.main = std::move(main);
  if (node) {
    // Every child's Hello, Execute and Destroy, and this lane's Data-in: header prefixes.
    std::vector<std::string> prefixes;
    for (auto t : {wire::msg_type::hello, wire::msg_type::execute, wire::msg_type::destroy})
      prefixes.push_back(std::string(wire::encode_header({t, 0}).data(), 4));
    prefixes.push_back(
      std::string(wire::encode_header({wire::msg_type::data_in, 0, lane}).data(), 8));
    zmqs::curve_keys keys{node->public_key, node->secret_key, node->server_key};
    st.sock = zmqs::subscriber(*st.ctx, endpoint, &keys, prefixes);
    st.node = std::move(node);
  } else {
    st.sock = zmqs::subscriber(*st.ctx, endpoint);
  }
  return poll_loop(self, [=] {
    auto& st = self->state;
    zmqs::drain( // a protocol error is reported once, and the drain goes on (for a Destroy)
      *st.sock, [&](zmqs::received& r) { handle(self, r); },
      [&](const std::exception& e) {
        if (st.broken)
          return;
        st.broken = true;
        self->send(st.pusher, failed_atom::value, st.lane, uint64_t{0},
                   std::string{"protocol error: "} + e.what());
      });
    st.report(self, true);
  });
}

} // namespace

caf::actor spawn_subscriber(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                            std::string endpoint, uint32_t lane, caf::actor stream,
                            caf::actor pusher, caf::actor main, const node_child* node) {
  std::optional<node_child> n;
  if (node)
    n = *node;
  return sys.spawn<caf::detached>(subscriber, std::move(ctx), std::move(endpoint), lane,
                                  std::move(stream), std::move(pusher), std::move(main),
                                  std::move(n));
}

} // namespace ag
