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

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"
#include "actors/process_setup.hpp"

namespace ag {

class flow_control;
class timeline;

namespace trace {
class writer;
} // namespace trace

struct executor_setup {
  std::vector<device> devices; // besides the cpu
  std::byte* store_base = nullptr;
  std::size_t store_size = 0;
  std::optional<process_setup> process; // empty: thread mode
  // Every lane must be ready by then; else start-up fails naming the lanes that are not.
  std::chrono::milliseconds start_timeout{60000};
  // The deadline of every sync and fetch; at it, the wait fails naming the silent devices.
  std::chrono::milliseconds wait_timeout{60000};
  // Process mode: while a child is this far behind in reading broadcasts (which every child
  // receives), the user's threads wait before they submit more.
  std::size_t max_queued_bytes = std::size_t{256} << 20;
  // Process mode: a child behind in reading its broadcasts that reads none for this long is failed
  // and killed. milliseconds::max(): never.
  std::chrono::milliseconds progress_timeout{10000};
  // The credits the user's threads took for what they submitted; the executor gives them back as
  // runners acknowledge. Null: nothing is bounded (nobody waits for credits).
  std::shared_ptr<flow_control> flow;
  // Records what the runners are sent and answer (docs/TRACE.md); null: nothing is recorded.
  std::shared_ptr<trace::writer> trace;
  // Spans of the executor's dispatches and of thread-mode runners' batches; null: none.
  std::shared_ptr<ag::timeline> timeline;
};

// Spawns the executor and, as lane 0, the cpu runner; then, for lanes 1.., one stream actor per
// device (thread mode) or a publisher, a puller and one runner proxy per device (process mode).
// Host tensors live in [store_base, store_base + store_size).
caf::actor spawn_executor(caf::actor_system& sys, executor_setup setup);

} // namespace ag
