// executor: the one place that knows the graph (the seed's EagerGraphExecutor), as an actor: the
// user's operators and the runners' answers come in as messages, the planner
// (actors/planner.hpp) decides, and what it decides goes out as messages to the lanes' actors
// (actors/lane_topology.hpp).
// Operators queued in one mailbox drain make one batch per runner (adaptive batching: a flush
// message sent to itself marks the end of the drain; no timer). Runners are monitored: a runner
// that stops fails the work with an error naming its device, never a hang.
//
//   running --shutdown--> stopping --every runner down, then the publisher and puller--> stopped
//   (start-up: until every runner is ready, operators are queued and a wait for start-up waits;
//   a runner down before it is ready fails start-up, naming the device)
//
// running and stopping are two behaviors (become); within running, start-up and failures are the
// planner's: a runner down or an operator failed fails what depended on it, and the next sync
// reports the first failure. Stopping answers every wait with an error and runs nothing new.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <vector>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"
#include "actors/planner.hpp"
#include "actors/process_setup.hpp"
#include "actors/protocol.hpp"
#include "actors/step_policy.hpp"

namespace ag {

class lane_streams;

struct executor_setup {
  std::vector<device> devices; // besides the cpu
  std::optional<process_setup> process; // empty: thread mode
  // Every lane must be ready by then; else start-up fails naming the lanes that are not.
  std::chrono::milliseconds start_timeout{60000};
  // The shared-memory path: how long the executor, and this process's stream actors, watch their
  // mailboxes once a drain is over before they go back to sleep on them (0: not at all).
  std::chrono::nanoseconds linger{0};
  // Thread mode: where the stream actors add their streams, for the user's threads that share a
  // device tensor's memory (tensor::device_bytes); null: nowhere.
  std::shared_ptr<lane_streams> streams;
  // Steps as graphs, on every device lane (graph_option::cuda_graphs).
  step_policy steps;
  // The store, deadlines, bounds, trace and timeline (its devices and process flag are set from
  // the two fields above).
  planner_setup plan;
};

// Spawns the executor and, as lane 0, the cpu runner; then, for lanes 1.., one stream actor per
// device (thread mode) or a publisher, a puller and one runner proxy per device (process mode).
// Host tensors live in [plan.store_base, plan.store_base + plan.store_size).
executor_actor spawn_executor(caf::actor_system& sys, executor_setup setup);

} // namespace ag
