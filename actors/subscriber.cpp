#include "actors/subscriber.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
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

  static inline const char* name = "ag.subscriber";
};

using subscriber_actor = caf::stateful_actor<subscriber_state>;

void handle(subscriber_actor* self, zmqs::received& r) {
  auto& st = self->state;
  if (st.broken) { // after a protocol error only Destroy is still honoured
    if (r.head.type == wire::msg_type::destroy)
      self->send(st.main, destroy_atom::value);
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
        if (b.lane == st.lane)
          self->send(st.stream, execute_atom::value, std::move(b));
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
                         caf::actor pusher, caf::actor main) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.lane = lane;
  st.stream = std::move(stream);
  st.pusher = std::move(pusher);
  st.main = std::move(main);
  st.sock = zmqs::subscriber(*st.ctx, endpoint);
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
                            caf::actor pusher, caf::actor main) {
  return sys.spawn<caf::detached>(subscriber, std::move(ctx), std::move(endpoint), lane,
                                  std::move(stream), std::move(pusher), std::move(main));
}

} // namespace ag
