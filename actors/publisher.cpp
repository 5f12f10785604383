#include "actors/publisher.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "actors/protocol.hpp"
#include "ipc/ring_publisher.hpp"
#include "ipc/trace.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

constexpr std::chrono::milliseconds hello_period{2};
constexpr std::chrono::milliseconds ring_retry_period{1};

struct publisher_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the socket below
  std::optional<zmq::socket_t> sock;
  std::shared_ptr<trace::writer> trace;
  uint64_t next_id = 1;
  bool saying_hello = true;

  std::shared_ptr<ring_publisher> ring;
  bool retrying = false;

  void publish(caf::event_based_actor* self, wire::msg_type type, wire::bytes body) {
    if (ring && type != wire::msg_type::hello) {
      if (!ring->publish(type, std::move(body)))
        retry(self);
      return;
    }
    const wire::header h{type, ring ? ring->next_id() : next_id++};
    if (trace)
      trace->write(trace::frame_rec{h.id, h.type, body});
    zmqs::send(*sock, h, body);
  }

  // While frames wait for room on the ring, looks again every millisecond.
  void retry(caf::event_based_actor* self) {
    if (retrying || ring->flush())
      return;
    retrying = true;
    self->delayed_send(self, ring_retry_period, poll_atom::value);
  }

  static inline const char* name = "ag.publisher";
};

caf::behavior publisher(caf::stateful_actor<publisher_state>* self,
                        std::shared_ptr<zmq::context_t> ctx, const std::string& endpoint,
                        std::shared_ptr<trace::writer> trace,
                        std::shared_ptr<ring_publisher> ring) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.trace = std::move(trace);
  st.ring = std::move(ring);
  st.sock = zmqs::publisher(*st.ctx, endpoint);
  self->send(self, hello_atom::value);
  return {
    [=](publish_atom, wire::execute_msg& msg) {
      self->state.publish(self, wire::msg_type::execute, wire::encode(msg));
    },
    [=](publish_atom, const std::vector<char>& body) {
      self->state.publish(self, wire::msg_type::execute, body);
    },
    [=](hello_atom) {
      auto& st = self->state;
      if (!st.saying_hello)
        return;
      st.publish(self, wire::msg_type::hello, {});
      self->delayed_send(self, hello_period, hello_atom::value);
    },
    [=](ready_atom) { self->state.saying_hello = false; },
    [=](destroy_atom) {
      self->state.saying_hello = false;
      self->state.publish(self, wire::msg_type::destroy, {});
    },
    [=](poll_atom) {
      self->state.retrying = false;
      self->state.retry(self);
    },
  };
}

} // namespace

caf::actor spawn_publisher(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                           std::string endpoint, std::shared_ptr<trace::writer> trace,
                           std::shared_ptr<ring_publisher> ring) {
  return sys.spawn<caf::detached>(publisher, std::move(ctx), std::move(endpoint), std::move(trace),
                                  std::move(ring));
}

} // namespace ag
