#include "actors/pusher.hpp"

#include <memory>
#include <optional>

#include <caf/all.hpp>

#include "actors/node_child.hpp"
#include "actors/protocol.hpp"
#include "actors/report_pusher.hpp"

namespace ag {

namespace {

struct pusher_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the sockets below
  std::optional<report_pusher> out;
  static inline const char* name = "ag.pusher";
};

caf::behavior pusher(caf::stateful_actor<pusher_state>* self, std::shared_ptr<zmq::context_t> ctx,
                     const std::string& endpoint, uint32_t lane, device where,
                     std::optional<node_child> node, uint64_t first_id) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.out.emplace(*st.ctx, endpoint, lane, where, std::move(node), first_id);
  return {
    [=](ready_atom, uint32_t) { self->state.out->runner_ready(); },
    [=](hello_atom) { self->state.out->heard_hello(); },
    [=](publish_atom, uint64_t ops_after, std::vector<uint64_t>& ranges) {
      self->state.out->writes(ops_after, std::move(ranges));
    },
    [=](done_atom, uint32_t l, uint64_t done, uint64_t entries, uint64_t live) {
      self->state.out->done(l, done, entries, live);
    },
    [=](received_atom, uint64_t count) { self->state.out->received(count); },
    [=](failed_atom, uint32_t l, uint64_t index, std::string& what) {
      self->state.out->failed(l, index, std::move(what));
    },
  };
}

} // namespace

caf::actor spawn_pusher(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                        std::string endpoint, uint32_t lane, device where,
                        const node_child* node, uint64_t first_id) {
  std::optional<node_child> n;
  if (node)
    n = *node;
  return sys.spawn<caf::detached>(pusher, std::move(ctx), std::move(endpoint), lane, where,
                                  std::move(n), first_id);
}

} // namespace ag
