// replay: runs a recorded trace (docs/TRACE.md) again against fresh runners and compares what they
// answer with what was recorded: freshly exec'd ag-runner children over real ZMQ sockets (process),
// or stream actors in this process (inproc). The engine behind apps/ag-replay.
//
// The trace is replayed in its recorded order: a message is sent once every acknowledgement recorded
// before it has arrived again, so a batch never runs before what it depended on when it was
// recorded. Each lane's acknowledgements (done, failed) are compared in order; every cpu tensor
// the user read is compared with the bytes recorded; the operands still held at the end are
// digested (device operands are copied to a scratch part of the store first).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"
#include "actorgraph/graph_option.hpp"
#include "actors/step_policy.hpp"

namespace ag {

namespace trace {
struct file;
} // namespace trace

class node_setup;

struct replay_options {
  std::vector<device> devices; // one per recorded device lane; empty: the recorded devices
  bool process = true;         // false: every lane is a stream actor in this process
  std::string runner_path;     // process: ag-runner (empty: found as the runtime finds it)
  // process: the shared-memory path (a broadcast ring, acknowledgements also on a board) or the
  // sockets alone; the same frames either way.
  ag::transport transport = ag::transport::shared_memory;
  // Deadline of every wait: start-up, each acknowledgement, shutdown.
  std::chrono::milliseconds timeout{std::chrono::seconds{60}};
  // Largest |replayed - recorded| / max(1, |recorded|) of a read element; 0: bit for bit.
  double tolerance = 0;
  // process, with devices on nodes: their set-up (the caller configured the actor system with it,
  // trusting trust_file, which the replay writes); every child then runs on the sockets path.
  const node_setup* nodes = nullptr;
  std::string trust_file;
  // Recorded steps (batch::step) as graphs on the device lanes, as graph_option::cuda_graphs and
  // the options beside it say (their defaults); enabled false: operator by operator.
  step_policy steps = default_steps();
  static step_policy default_steps() noexcept {
    step_policy p;
    p.enabled = true;
    return p;
  }
};

struct operand_digest {
  std::string what;   // "read #12" or "live #7 on sim:0"
  uint64_t bytes = 0;
  uint64_t digest = 0; // trace::digest of its bytes
};

struct replay_report {
  bool matched = true;
  std::string divergence; // the first, naming the lane, the message and the operator
  uint64_t messages = 0;  // batches messages sent (execute frames and local batches)
  uint64_t acks = 0;      // acknowledgements compared
  uint64_t reads = 0;     // reads compared
  uint64_t collectives = 0; // collectives recorded: their operators replay in the batches
  double worst_relative = 0; // the largest difference a read was let through with (tolerance)
  std::vector<operand_digest> digests; // every read in order, then every live operand
};

// Throws ag::error when the replay cannot run at all (a runner that does not start, devices that
// do not fit the trace); a divergence is a report with matched = false.
replay_report replay(caf::actor_system& sys, const trace::file& recorded,
                     const replay_options& opt);

// The digests as ag-replay prints them, one per line, then the digest of them all.
std::string format_digests(const std::vector<operand_digest>& digests);

} // namespace ag
