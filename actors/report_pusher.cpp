#include "actors/report_pusher.hpp"

#include <unistd.h>

#include "ipc/zmq_sockets.hpp"

namespace ag {

zmq::socket_t child_pusher(zmq::context_t& ctx, const std::string& endpoint,
                           const std::optional<node_child>& node, int io_thread) {
  if (!node)
    return zmqs::pusher(ctx, endpoint, nullptr, io_thread);
  zmqs::curve_keys keys{node->public_key, node->secret_key, node->server_key};
  return zmqs::pusher(ctx, endpoint, &keys, io_thread);
}

report_pusher::report_pusher(zmq::context_t& ctx, const std::string& endpoint, uint32_t lane,
                             device where, std::optional<node_child> node, uint64_t first_id)
  : sock_(child_pusher(ctx, endpoint, node)), next_id_(first_id), lane_(lane), where_(where),
    node_(std::move(node)) {
  if (node_)
    for (std::size_t k = 0; k < node_->return_endpoints.size(); ++k) // stream k: I/O thread k + 1
      returns_.push_back(
        child_pusher(ctx, node_->return_endpoints[k], node_, static_cast<int>(k + 1)));
}

void report_pusher::push(wire::msg_type type, const wire::bytes& body) {
  zmqs::send(sock_, {type, next_id_++}, body);
}

void report_pusher::runner_ready() {
  runner_ready_ = true;
  maybe_ready();
}

void report_pusher::heard_hello() {
  heard_hello_ = true;
  maybe_ready();
}

void report_pusher::maybe_ready() {
  if (ready_sent_ || !runner_ready_ || !heard_hello_)
    return;
  wire::ready_msg m{lane_, where_, static_cast<int32_t>(::getpid())};
  push(wire::msg_type::ready, wire::encode(m));
  ready_sent_ = true;
}

void report_pusher::writes(uint64_t ops_after, std::vector<uint64_t> ranges) {
  pending_.push_back({ops_after, std::move(ranges)});
}

// Before a Done of `done` operators: the bytes the batches it covers wrote. With return streams
// they go there, piece i on stream (i - 1) % n, and a Data-done names the last piece; but a
// Done's writes of small_writes bytes or less go on the reports connection itself, ahead of the
// Done: one connection, one wake-up on each side, and nothing for the controller to wait for.
void report_pusher::send_writes(uint32_t l, uint64_t done) {
  uint64_t total = 0;
  for (const auto& w : pending_) {
    if (w.ops_after > done)
      break;
    for (std::size_t i = 0; i + 1 < w.ranges.size(); i += 2)
      total += w.ranges[i + 1];
  }
  std::vector<zmq::socket_t*> to;
  if (total > small_writes)
    for (auto& s : returns_)
      to.push_back(&s);
  const uint64_t first_piece = next_piece_;
  while (!pending_.empty() && pending_.front().ops_after <= done) {
    const auto& r = pending_.front().ranges;
    for (std::size_t i = 0; i + 1 < r.size(); i += 2) {
      const uint64_t offset = r[i];
      const uint64_t bytes = r[i + 1];
      if (offset > node_->store_size || bytes > node_->store_size - offset)
        continue; // the runner refused that operator already, naming the range
      const auto* from = reinterpret_cast<const char*>(node_->store_base) + offset;
      if (to.empty())
        zmqs::send_data(sock_, wire::msg_type::data_out, l, next_id_, offset, from, bytes);
      else
        zmqs::send_data(to, wire::msg_type::data_out, l, next_piece_, offset, from, bytes);
    }
    pending_.pop_front();
  }
  if (next_piece_ != first_piece)
    zmqs::send(sock_, {wire::msg_type::data_done, next_id_++, l},
               wire::encode_data_done(next_piece_ - 1));
}

void report_pusher::done(uint32_t l, uint64_t ops_done, uint64_t entries, uint64_t live) {
  if (node_)
    send_writes(l, ops_done);
  wire::done_msg m{l, ops_done, live, entries};
  push(wire::msg_type::done, wire::encode(m));
}

void report_pusher::failed(uint32_t l, uint64_t index, std::string what) {
  wire::failed_msg m{l, index, std::move(what)};
  push(wire::msg_type::failed, wire::encode(m));
}

void report_pusher::received(uint64_t count) {
  wire::received_msg m{lane_, count};
  push(wire::msg_type::received, wire::encode(m));
}

} // namespace ag
