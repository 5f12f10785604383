#include "actors/pulse_pusher.hpp"

#include "actors/report_pusher.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

pulse_pusher::pulse_pusher(zmq::context_t& ctx, const std::string& endpoint, uint32_t lane,
                           const operator_mark& running,
                           const std::optional<node_child>& node)
  : sock_(child_pusher(ctx, endpoint, node)), lane_(lane), running_(running) {}

void pulse_pusher::look() {
  const uint64_t now = running_.running();
  if (now == 0 && last_ == 0)
    return;
  zmqs::send(sock_, {wire::msg_type::pulse, next_id_++, lane_}, wire::encode_pulse(now));
  last_ = now;
}

} // namespace ag
