#include "actors/publisher.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "actors/protocol.hpp"
#include "ipc/trace.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

constexpr std::chrono::milliseconds hello_period{2};

struct publisher_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the socket below
  std::optional<zmq::socket_t> sock;
  std::shared_ptr<trace::writer> trace;
  uint64_t next_id = 1;
  bool saying_hello = true;

  void publish(wire::msg_type type, const wire::bytes& body) {
    const wire::header h{type, next_id++};
    if (trace)
      trace->write(trace::frame_rec{h.id, h.type, body});
    zmqs::send(*sock, h, body);
  }

  static inline const char* name = "ag.publisher";
};

caf::behavior publisher(caf::stateful_actor<publisher_state>* self,
                        std::shared_ptr<zmq::context_t> ctx, const std::string& endpoint,
                        std::shared_ptr<trace::writer> trace) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.trace = std::move(trace);
  st.sock = zmqs::publisher(*st.ctx, endpoint);
  self->send(self, hello_atom::value);
  return {
    [=](publish_atom, wire::execute_msg& msg) {
      self->state.publish(wire::msg_type::execute, wire::encode(msg));
    },
    [=](publish_atom, const std::vector<char>& body) {
      self->state.publish(wire::msg_type::execute, body);
    },
    [=](hello_atom) {
      auto& st = self->state;
      if (!st.saying_hello)
        return;
      st.publish(wire::msg_type::hello, {});
      self->delayed_send(self, hello_period, hello_atom::value);
    },
    [=](ready_atom) { self->state.saying_hello = false; },
    [=](destroy_atom) {
      self->state.saying_hello = false;
      self->state.publish(wire::msg_type::destroy, {});
    },
  };
}

} // namespace

caf::actor spawn_publisher(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                           std::string endpoint, std::shared_ptr<trace::writer> trace) {
  return sys.spawn<caf::detached>(publisher, std::move(ctx), std::move(endpoint), std::move(trace));
}

} // namespace ag
