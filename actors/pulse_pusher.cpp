#include "actors/pulse_pusher.hpp"

#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

zmq::socket_t pulse_socket(zmq::context_t& ctx, const std::string& endpoint,
                           const std::optional<node_child>& node) {
  if (!node)
    return zmqs::pusher(ctx, endpoint);
  zmqs::curve_keys keys{node->public_key, node->secret_key, node->server_key};
  return zmqs::pusher(ctx, endpoint, &keys);
}

} // namespace

pulse_pusher::pulse_pusher(zmq::context_t& ctx, const std::string& endpoint, uint32_t lane,
                           const operator_mark& running,
                           const std::optional<node_child>& node)
  : sock_(pulse_socket(ctx, endpoint, node)), lane_(lane), running_(running) {}

void pulse_pusher::look() {
  const uint64_t now = running_.running();
  if (now == 0 && last_ == 0)
    return;
  zmqs::send(sock_, {wire::msg_type::pulse, next_id_++, lane_}, wire::encode_pulse(now));
  last_ = now;
}

} // namespace ag
