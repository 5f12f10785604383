#include "actors/publisher.hpp"

#include <chrono>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/process_setup.hpp"
#include "actors/protocol.hpp"
#include "ipc/descriptors.hpp"
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

  // With nodes: their children's socket, which lanes are theirs, each lane's Data-in sequence, and
  // the store the bytes come from.
  std::shared_ptr<network_setup> network;
  std::optional<zmq::socket_t> net;
  std::vector<zmq::socket_t> data;      // the data streams (none: `net` carries the pieces)
  std::vector<zmq::socket_t*> carriers; // where pieces go: the data streams, else `net`
  std::vector<uint64_t> data_ids;
  const std::byte* store_base = nullptr;
  std::size_t store_size = 0;

  // `msg`: the Execute's batches when they are at hand (else decoded from `body` if needed).
  void publish(caf::event_based_actor* self, wire::msg_type type, wire::bytes body,
               const wire::execute_msg* msg = nullptr) {
    if (ring && type != wire::msg_type::hello) {
      if (!ring->publish(type, std::move(body)))
        retry(self);
      return;
    }
    const wire::header h{type, ring ? ring->next_id() : next_id++};
    if (trace)
      trace->write(trace::frame_rec{h.id, h.type, body});
    zmqs::send(*sock, h, body);
    if (net) {
      if (type == wire::msg_type::execute)
        send_node_reads(body, msg);
      zmqs::send(*net, h, body);
      if (type == wire::msg_type::hello) // each data stream's subscriber must hear one too
        for (auto& d : data)
          zmqs::send(d, h, body);
    }
  }

  // Before an Execute: the store bytes its node lanes' batches read, each lane's followed by a
  // Data-sent on the broadcast connection that names the last piece the lane must have.
  void send_node_reads(const wire::bytes& body, const wire::execute_msg* msg) {
    wire::execute_msg decoded;
    if (msg == nullptr) {
      wire::decode(body.data(), body.size(), decoded);
      msg = &decoded;
    }
    const auto& lane_node = network->lane_node;
    for (const auto& b : msg->batches) {
      if (b.lane >= lane_node.size() || lane_node[b.lane].empty())
        continue;
      const auto reads = host_reads(b);
      if (reads.empty())
        continue;
      for (const auto& r : reads) {
        if (r.offset > store_size || r.bytes > store_size - r.offset)
          throw error("publisher: lane " + std::to_string(b.lane) + " reads store range ["
                      + std::to_string(r.offset) + ", +" + std::to_string(r.bytes)
                      + ") beyond the store");
        zmqs::send_data(carriers, wire::msg_type::data_in, b.lane, data_ids[b.lane], r.offset,
                        reinterpret_cast<const char*>(store_base) + r.offset, r.bytes);
      }
      zmqs::send(*net, {wire::msg_type::data_sent, data_ids[b.lane] - 1, b.lane}, {});
    }
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
                        std::shared_ptr<ring_publisher> ring,
                        std::shared_ptr<network_setup> network, const std::byte* store_base,
                        std::size_t store_size) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.trace = std::move(trace);
  st.ring = std::move(ring);
  try {
    st.sock = zmqs::publisher(*st.ctx, endpoint);
  } catch (const zmq::error_t& e) { // no descriptor left, most likely: the runtime fails, saying so
    self->quit(make_error(errc::device_failed, socket_failure("publisher", endpoint, e.what(), e.num())));
    return {};
  }
  if (network) {
    st.net.emplace(std::move(*network->pub));
    for (auto& d : network->data)
      st.data.push_back(std::move(*d));
    for (auto& d : st.data)
      st.carriers.push_back(&d);
    if (st.carriers.empty())
      st.carriers.push_back(&*st.net);
    st.data_ids.assign(network->lane_node.size(), 1);
    st.network = std::move(network);
    st.store_base = store_base;
    st.store_size = store_size;
  }
  self->send(self, hello_atom::value);
  return {
    [=](publish_atom, wire::execute_msg& msg) {
      self->state.publish(self, wire::msg_type::execute, wire::encode(msg), &msg);
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
                           std::shared_ptr<ring_publisher> ring,
                           std::shared_ptr<network_setup> network, const std::byte* store_base,
                           std::size_t store_size) {
  return sys.spawn<caf::detached>(publisher, std::move(ctx), std::move(endpoint), std::move(trace),
                                  std::move(ring), std::move(network), store_base, store_size);
}

} // namespace ag
