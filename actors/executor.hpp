// executor: the one place that knows the graph (the seed's EagerGraphExecutor). Takes the user's
// operators, drains whatever is queued into one batch per runner (adaptive batching: a flush
// message sent to itself marks the end of the drain; no timer), places every operand (device
// memory by id, or a range of the host store it allocates), releases operands nobody holds in the
// same batch (the seed's noHoldOperands), and holds back the destination half of a move until the
// source acknowledged its half. Runners are monitored: a runner that stops fails the work with an
// error naming its device, never a hang.
//
//   starting --every runner ready--> running --shutdown--> stopping --every runner down--> stopped
//       |                               |
//       +--a runner down: start-up      +--a runner down or an op failed: failed (every pending
//          fails, naming the device        and later wait answers with the first error)
#pragma once

#include <cstddef>
#include <vector>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"

namespace ag {

// Spawns the executor and, as lane 0, the cpu runner, then one stream actor per device (lanes 1..).
// Host tensors live in [store_base, store_base + store_size).
caf::actor spawn_executor(caf::actor_system& sys, std::vector<device> devices,
                          std::byte* store_base, std::size_t store_size);

} // namespace ag
