#include "actors/puller.hpp"

#include <unordered_map>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/poll_loop.hpp"
#include "actors/protocol.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

struct puller_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the socket below
  std::optional<zmq::socket_t> sock;
  caf::actor executor;
  std::unordered_map<uint32_t, uint64_t> last_id; // per lane

  static inline const char* name = "ag.puller";
};

using puller_actor = caf::stateful_actor<puller_state>;

// A protocol error that one lane's child is to blame for: only that lane fails.
struct lane_error : error {
  lane_error(uint32_t lane, const std::string& what) : error(what), lane(lane) {}
  uint32_t lane;
};

// Checks that lane's messages arrive with ids 1, 2, 3, ...
void check_sequence(puller_state& st, uint32_t lane, uint64_t id) {
  if (lane == cpu_lane) // the controller's own: no child speaks for it
    throw error("wire: a child's message names lane 0, the controller's cpu");
  auto& last = st.last_id[lane];
  if (id != last + 1)
    throw lane_error(lane, "wire: message " + std::to_string(id) + " from lane "
                             + std::to_string(lane) + " after message " + std::to_string(last)
                             + " (a gap or a replay)");
  last = id;
}

void handle(puller_actor* self, zmqs::received& r) {
  auto& st = self->state;
  const auto* data = r.body.data();
  const auto size = r.body.size();
  switch (r.head.type) {
    case wire::msg_type::ready: {
      wire::ready_msg m;
      wire::decode(data, size, m);
      check_sequence(st, m.lane, r.head.id);
      self->send(st.executor, ready_atom::value, m.lane);
      return;
    }
    case wire::msg_type::done: {
      wire::done_msg m;
      wire::decode(data, size, m);
      check_sequence(st, m.lane, r.head.id);
      self->send(st.executor, done_atom::value, m.lane, m.ops_done, m.device_bytes);
      return;
    }
    case wire::msg_type::failed: {
      wire::failed_msg m;
      wire::decode(data, size, m);
      check_sequence(st, m.lane, r.head.id);
      self->send(st.executor, failed_atom::value, m.lane, m.index, std::move(m.what));
      return;
    }
    case wire::msg_type::received: {
      wire::received_msg m;
      wire::decode(data, size, m);
      check_sequence(st, m.lane, r.head.id);
      self->send(st.executor, received_atom::value, m.lane, m.count);
      return;
    }
    default:
      throw error("wire: a child sent " + wire::to_string(r.head.type)
                  + ", which only the controller sends");
  }
}

caf::behavior puller(puller_actor* self, std::shared_ptr<zmq::context_t> ctx,
                     const std::string& endpoint, caf::actor executor) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.executor = std::move(executor);
  st.sock = zmqs::puller(*st.ctx, endpoint);
  return poll_loop(self, [=] {
    auto& st = self->state;
    try { // a protocol error ends the drain
      zmqs::drain(*st.sock, [&](zmqs::received& r) { handle(self, r); });
    } catch (const lane_error& e) {
      self->send(st.executor, failed_atom::value, e.lane, uint64_t{0},
                 std::string{"protocol error from its child: "} + e.what());
    } catch (const std::exception& e) { // a frame no lane can be blamed for
      self->send(st.executor, failed_atom::value, no_lane, uint64_t{0},
                 std::string{"protocol error from a child: "} + e.what());
    }
  });
}

} // namespace

caf::actor spawn_puller(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                        std::string endpoint, caf::actor executor) {
  return sys.spawn<caf::detached>(puller, std::move(ctx), std::move(endpoint), std::move(executor));
}

} // namespace ag
