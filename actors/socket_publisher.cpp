#include "actors/socket_publisher.hpp"

#include <cstdio>

#include "actorgraph/error.hpp"
#include "actors/process_setup.hpp"
#include "ipc/descriptors.hpp"
#include "ipc/ring_publisher.hpp"
#include "ipc/trace.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

socket_publisher::socket_publisher(std::shared_ptr<zmq::context_t> ctx,
                                   const std::string& endpoint,
                                   std::shared_ptr<trace::writer> trace,
                                   std::shared_ptr<ring_publisher> ring,
                                   std::shared_ptr<network_setup> network,
                                   const std::byte* store_base, std::size_t store_size)
  : ctx_(std::move(ctx)), trace_(std::move(trace)), ring_(std::move(ring)) {
  try {
    sock_.emplace(zmqs::publisher(*ctx_, endpoint));
  } catch (const zmq::error_t& e) { // no descriptor left, most likely: the runtime fails, saying so
    throw error(socket_failure("publisher", endpoint, e.what(), e.num()));
  }
  if (network) {
    net_.emplace(std::move(*network->pub));
    for (auto& d : network->data)
      data_.push_back(std::move(*d));
    for (auto& d : data_)
      carriers_.push_back(&d);
    if (carriers_.empty())
      carriers_.push_back(&*net_);
    data_ids_.assign(network->lane_node.size(), 1);
    gate_.emplace(network->lane_node);
    network_ = std::move(network);
    store_base_ = store_base;
    store_size_ = store_size;
  }
}

bool socket_publisher::execute(wire::bytes body, const wire::execute_msg* msg) {
  return publish(wire::msg_type::execute, std::move(body), msg);
}

void socket_publisher::restarted(uint32_t lane) noexcept {
  if (lane < data_ids_.size())
    data_ids_[lane] = 1;
  saying_hello_ = true;
}

bool socket_publisher::hello() {
  if (!saying_hello_)
    return false;
  if (gate_) {
    const auto refuse = [](const std::string& line) {
      std::fprintf(stderr, "actorgraph: data plane: %s\n", line.c_str());
    };
    gate_->admit(*net_, false, refuse);
    for (auto& d : data_)
      gate_->admit(d, true, refuse);
  }
  publish(wire::msg_type::hello, {}, nullptr);
  return true;
}

bool socket_publisher::destroy() {
  saying_hello_ = false;
  return publish(wire::msg_type::destroy, {}, nullptr);
}

bool socket_publisher::publish(wire::msg_type type, wire::bytes body,
                               const wire::execute_msg* msg) {
  if (ring_ && type != wire::msg_type::hello)
    return ring_->publish(type, std::move(body));
  const wire::header h{type, ring_ ? ring_->next_id() : next_id_++};
  if (trace_)
    trace_->write(trace::frame_rec{h.id, h.type, body});
  zmqs::send(*sock_, h, body);
  if (net_) {
    if (type == wire::msg_type::execute)
      send_node_reads(body, msg);
    zmqs::send(*net_, h, body);
    if (type == wire::msg_type::hello) // each data stream's subscriber must hear one too
      for (auto& d : data_)
        zmqs::send(d, h, body);
  }
  return true;
}

// Before an Execute: the store bytes its node lanes' batches read, each lane's followed by a
// Data-sent on the broadcast connection that names the last piece the lane must have.
void socket_publisher::send_node_reads(const wire::bytes& body, const wire::execute_msg* msg) {
  wire::execute_msg decoded;
  if (msg == nullptr) {
    wire::decode(body.data(), body.size(), decoded);
    msg = &decoded;
  }
  const auto& lane_node = network_->lane_node;
  for (const auto& b : msg->batches) {
    if (b.lane >= lane_node.size() || lane_node[b.lane].empty())
      continue;
    const auto reads = host_reads(b);
    if (reads.empty())
      continue;
    for (const auto& r : reads) {
      if (r.offset > store_size_ || r.bytes > store_size_ - r.offset)
        throw error("publisher: lane " + std::to_string(b.lane) + " reads store range ["
                    + std::to_string(r.offset) + ", +" + std::to_string(r.bytes)
                    + ") beyond the store");
      zmqs::send_data(carriers_, wire::msg_type::data_in, b.lane, data_ids_[b.lane], r.offset,
                      reinterpret_cast<const char*>(store_base_) + r.offset, r.bytes);
    }
    zmqs::send(*net_, {wire::msg_type::data_sent, data_ids_[b.lane] - 1, b.lane}, {});
  }
}

} // namespace ag
