#include "actors/pusher.hpp"

#include <deque>
#include <optional>

#include <unistd.h>

#include <caf/all.hpp>

#include "actors/node_child.hpp"
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

  // A node's child: its store, and per batch still to be acknowledged what it writes there; with
  // return streams, their sockets and the lane's last Data-out piece id on them.
  std::optional<node_child> node;
  std::vector<zmq::socket_t> returns;
  uint64_t next_piece = 1;
  struct writes {
    uint64_t ops_after = 0;
    std::vector<uint64_t> ranges; // offset, bytes, offset, bytes, ...
  };
  std::deque<writes> pending;

  // Before a Done of `done` operators: the bytes the batches it covers wrote. With return streams
  // they go there, piece i on stream (i - 1) % n, and a Data-done names the last piece.
  void send_writes(uint32_t l, uint64_t done) {
    std::vector<zmq::socket_t*> to;
    for (auto& s : returns)
      to.push_back(&s);
    const uint64_t first_piece = next_piece;
    while (!pending.empty() && pending.front().ops_after <= done) {
      const auto& r = pending.front().ranges;
      for (std::size_t i = 0; i + 1 < r.size(); i += 2) {
        const uint64_t offset = r[i];
        const uint64_t bytes = r[i + 1];
        if (offset > node->store_size || bytes > node->store_size - offset)
          continue; // the stream refused that operator already, naming the range
        const auto* from = reinterpret_cast<const char*>(node->store_base) + offset;
        if (to.empty())
          zmqs::send_data(*sock, wire::msg_type::data_out, l, next_id, offset, from, bytes);
        else
          zmqs::send_data(to, wire::msg_type::data_out, l, next_piece, offset, from, bytes);
      }
      pending.pop_front();
    }
    if (next_piece != first_piece)
      zmqs::send(*sock, {wire::msg_type::data_done, next_id++, l},
                 wire::encode_data_done(next_piece - 1));
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
                     const std::string& endpoint, uint32_t lane, device where,
                     std::optional<node_child> node) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  if (node) {
    zmqs::curve_keys keys{node->public_key, node->secret_key, node->server_key};
    st.sock = zmqs::pusher(*st.ctx, endpoint, &keys);
    for (std::size_t k = 0; k < node->return_endpoints.size(); ++k) // stream k: I/O thread k + 1
      st.returns.push_back(
        zmqs::pusher(*st.ctx, node->return_endpoints[k], &keys, static_cast<int>(k + 1)));
    st.node = std::move(node);
  } else {
    st.sock = zmqs::pusher(*st.ctx, endpoint);
  }
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
    [=](publish_atom, uint64_t ops_after, std::vector<uint64_t>& ranges) {
      self->state.pending.push_back({ops_after, std::move(ranges)});
    },
    [=](done_atom, uint32_t l, uint64_t done, uint64_t entries, uint64_t live) {
      if (self->state.node)
        self->state.send_writes(l, done);
      wire::done_msg m{l, done, live, entries};
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
                        std::string endpoint, uint32_t lane, device where,
                        const node_child* node) {
  std::optional<node_child> n;
  if (node)
    n = *node;
  return sys.spawn<caf::detached>(pusher, std::move(ctx), std::move(endpoint), lane, where,
                                  std::move(n));
}

} // namespace ag
