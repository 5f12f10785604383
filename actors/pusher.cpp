#include "actors/pusher.hpp"

#include <unistd.h>

#include <caf/all.hpp>

#include "actors/protocol.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

struct pusher_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the socket below
  std::optional<zmq::socket_t> sock;
  uint64_t next_id = 1;
  uint32_t lane = 0;
  device where;
  bool stream_ready = false;
  bool heard_hello = false;
  bool ready_sent = false;

  void push(wire::msg_type type, const wire::bytes& body) {
    zmqs::send(*sock, {type, next_id++}, body);
  }

  void maybe_ready() {
    if (ready_sent || !stream_ready || !heard_hello)
      return;
    wire::ready_msg m{lane, where, static_cast<int32_t>(::getpid())};
    push(wire::msg_type::ready, wire::encode(m));
    ready_sent = true;
  }

  static inline const char* name = "ag.pusher";
};

caf::behavior pusher(caf::stateful_actor<pusher_state>* self, std::shared_ptr<zmq::context_t> ctx,
                     const std::string& endpoint, uint32_t lane, device where) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.sock = zmqs::pusher(*st.ctx, endpoint);
  st.lane = lane;
  st.where = where;
  return {
    [=](ready_atom, uint32_t) {
      self->state.stream_ready = true;
      self->state.maybe_ready();
    },
    [=](hello_atom) {
      self->state.heard_hello = true;
      self->state.maybe_ready();
    },
    [=](done_atom, uint32_t l, uint64_t done, uint64_t live) {
      wire::done_msg m{l, done, live};
      self->state.push(wire::msg_type::done, wire::encode(m));
    },
    [=](received_atom, uint64_t count) {
      wire::received_msg m{self->state.lane, count};
      self->state.push(wire::msg_type::received, wire::encode(m));
    },
    [=](failed_atom, uint32_t l, uint64_t index, std::string& what) {
      wire::failed_msg m{l, index, std::move(what)};
      self->state.push(wire::msg_type::failed, wire::encode(m));
    },
  };
}

} // namespace

caf::actor spawn_pusher(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                        std::string endpoint, uint32_t lane, device where) {
  return sys.spawn<caf::detached>(pusher, std::move(ctx), std::move(endpoint), lane, where);
}

} // namespace ag
