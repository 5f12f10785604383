// pulse_pusher: a child's sign of life on the sockets, from its main thread on a PUSH socket of
// its own. Its runner (the subscriber's thread) may spend seconds inside one operator, reading no
// broadcast and reporting nothing; the controller's watchdog must tell that from a child that is
// stopped. So while the runner's mark shows an operator, each look (every 50 ms) pushes a Pulse
// naming it, and one more once the mark is back to 0; a child between operators sends nothing.
// The puller shows each Pulse on the controller's board as the child's heartbeat and running
// operator, as a child on the shared-memory path shows them there itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "actors/node_child.hpp"
#include "actors/operator_mark.hpp"

namespace ag {

class pulse_pusher {
public:
  // `running`: the runner's mark (batch_runner_setup::running), which outlives this.
  pulse_pusher(zmq::context_t& ctx, const std::string& endpoint, uint32_t lane,
               const operator_mark& running, const std::optional<node_child>& node);

  // One look at the mark: a Pulse when the runner is inside an operator, or just left one.
  void look();

  uint64_t sent() const noexcept { return next_id_ - 1; }

private:
  zmq::socket_t sock_;
  uint32_t lane_;
  const operator_mark& running_;
  uint64_t last_ = 0; // the index the last Pulse named
  uint64_t next_id_ = 1;
};

} // namespace ag
