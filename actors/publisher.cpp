#include "actors/publisher.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "actors/protocol.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

constexpr std::chrono::milliseconds hello_period{2};

struct publisher_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the socket below
  std::optional<zmq::socket_t> sock;
  uint64_t next_id = 1;
  bool saying_hello = true;

  void publish(wire::msg_type type, const wire::bytes& body) {
    zmqs::send(*sock, {type, next_id++}, body);
  }

  static inline const char* name = "ag.publisher";
};

caf::behavior publisher(caf::stateful_actor<publisher_state>* self,
                        std::shared_ptr<zmq::context_t> ctx, const std::string& endpoint) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.sock = zmqs::publisher(*st.ctx, endpoint);
  self->send(self, hello_atom::value);
  return {
    [=](publish_atom, wire::execute_msg& msg) {
      self->state.publish(wire::msg_type::execute, wire::encode(msg));
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
                           std::string endpoint) {
  return sys.spawn<caf::detached>(publisher, std::move(ctx), std::move(endpoint));
}

} // namespace ag
