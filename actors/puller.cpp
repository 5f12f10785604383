#include "actors/puller.hpp"

#include <cstring>
#include <unordered_map>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/poll_loop.hpp"
#include "actors/process_setup.hpp"
#include "actors/protocol.hpp"
#include "ipc/descriptors.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

struct puller_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the socket below
  std::optional<zmq::socket_t> sock;
  caf::actor executor;
  std::unordered_map<uint32_t, uint64_t> last_id; // per lane
  // With nodes: their children's socket, and the store their Data-out bytes go to.
  std::shared_ptr<network_setup> network;
  std::optional<zmq::socket_t> net;
  std::byte* store_base = nullptr;
  std::size_t store_size = 0;

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

// A lane's messages come from where that lane runs: a node's lane from that node's identity over
// TCP (`user`), a local lane over the local socket (user empty).
void check_sender(puller_state& st, uint32_t lane, const std::string& user, bool tcp) {
  const std::string expected =
    st.network && lane < st.network->lane_node.size() ? st.network->lane_node[lane] : "";
  if (tcp && user != expected)
    throw error("wire: a message for lane " + std::to_string(lane) + " from node \"" + user
                + "\", " + (expected.empty() ? "but that lane is local" : "not " + expected)
                + " (forged)");
  if (!tcp && !expected.empty())
    throw error("wire: a message for lane " + std::to_string(lane) + " (on " + expected
                + ") over the local socket (forged)");
}

void handle(puller_actor* self, zmqs::received& r, bool tcp) {
  auto& st = self->state;
  const auto* data = r.body.data();
  const auto size = r.body.size();
  const std::string user = tcp ? r.user() : std::string{};
  auto check = [&](uint32_t lane) {
    check_sender(st, lane, user, tcp);
    check_sequence(st, lane, r.head.id);
  };
  switch (r.head.type) {
    case wire::msg_type::data_out: {
      check(r.head.lane);
      const uint64_t offset = wire::decode_data_offset(data, size);
      const std::size_t bytes = r.data.size();
      if (offset > st.store_size || bytes > st.store_size - offset)
        throw lane_error(r.head.lane, "wire: data_out to store range [" + std::to_string(offset)
                                        + ", +" + std::to_string(bytes) + ") beyond the "
                                        + std::to_string(st.store_size) + "-byte store");
      if (bytes > 0)
        std::memcpy(st.store_base + offset, r.data.data(), bytes);
      return;
    }
    case wire::msg_type::ready: {
      wire::ready_msg m;
      wire::decode(data, size, m);
      check(m.lane);
      self->send(st.executor, ready_atom::value, m.lane);
      return;
    }
    case wire::msg_type::done: {
      wire::done_msg m;
      wire::decode(data, size, m);
      check(m.lane);
      self->send(st.executor, done_atom::value, m.lane, m.ops_done, m.device_bytes);
      return;
    }
    case wire::msg_type::failed: {
      wire::failed_msg m;
      wire::decode(data, size, m);
      check(m.lane);
      self->send(st.executor, failed_atom::value, m.lane, m.index, std::move(m.what));
      return;
    }
    case wire::msg_type::received: {
      wire::received_msg m;
      wire::decode(data, size, m);
      check(m.lane);
      self->send(st.executor, received_atom::value, m.lane, m.count);
      return;
    }
    default:
      throw error("wire: a child sent " + wire::to_string(r.head.type)
                  + ", which only the controller sends");
  }
}

void drain(puller_actor* self, zmq::socket_t& sock, bool tcp, std::chrono::milliseconds wait) {
  auto& st = self->state;
  try { // a protocol error ends the drain
    zmqs::drain(sock, [&](zmqs::received& r) { handle(self, r, tcp); }, wait);
  } catch (const lane_error& e) {
    self->send(st.executor, failed_atom::value, e.lane, uint64_t{0},
               std::string{"protocol error from its child: "} + e.what());
  } catch (const std::exception& e) { // a frame no lane can be blamed for
    self->send(st.executor, failed_atom::value, no_lane, uint64_t{0},
               std::string{"protocol error from a child: "} + e.what());
  }
}

caf::behavior puller(puller_actor* self, std::shared_ptr<zmq::context_t> ctx,
                     const std::string& endpoint, caf::actor executor,
                     std::shared_ptr<network_setup> network, std::byte* store_base,
                     std::size_t store_size) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.executor = std::move(executor);
  try {
    st.sock = zmqs::puller(*st.ctx, endpoint);
  } catch (const zmq::error_t& e) { // no descriptor left, most likely: the runtime fails, saying so
    self->quit(make_error(errc::device_failed, socket_failure("puller", endpoint, e.what(), e.num())));
    return {};
  }
  if (network) {
    st.net.emplace(std::move(*network->pull));
    st.network = std::move(network);
    st.store_base = store_base;
    st.store_size = store_size;
  }
  return poll_loop(self, [=] {
    auto& st = self->state;
    if (!st.net)
      return drain(self, *st.sock, false, zmqs::drain_wait);
    for (auto* s : zmqs::wait_any({&*st.sock, &*st.net}))
      drain(self, *s, s == &*st.net, std::chrono::milliseconds{0});
  });
}

} // namespace

caf::actor spawn_puller(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                        std::string endpoint, caf::actor executor,
                        std::shared_ptr<network_setup> network, std::byte* store_base,
                        std::size_t store_size) {
  return sys.spawn<caf::detached>(puller, std::move(ctx), std::move(endpoint), std::move(executor),
                                  std::move(network), store_base, store_size);
}

} // namespace ag
