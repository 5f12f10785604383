// stream_actor: one device's runner (the seed's KernelStream + NaiveRunner behind
// PerDeviceThreadNodeRunner; in process mode the same actor runs inside each child). Runs each
// batch in order on its kernel stream (on CUDA: launches it), releases the batch's no-hold
// operands, and acknowledges once the work is finished: when no further batch waits in its
// mailbox (or 4096 operators, or copies of an eighth of the store, are unconfirmed) it
// synchronizes the stream and acknowledges every batch since the last synchronize, each with the
// device bytes live after it. While batches keep
// arriving, launches go back to back and the GPU never waits for an acknowledgement.
//
//   starting --stream created--> ready (sends ready) --execute--> launched --mailbox empty:
//       |                                   |                     synchronize, ack--> ready
//       +--stream fails: quits with         |  an op fails: what ran before is acknowledged,
//          device_failed (executor sees     |  failed sent, later ops skipped, releases honoured
//          it as a down message)            +--exit--> stopped (operands freed, stream closed)
//
// Spawned detached: a synchronize blocks its thread for as long as the kernels take.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"
#include "actors/protocol.hpp"
#include "actors/step_policy.hpp"
#include "cuda/export_wait.hpp"

namespace ag {

class completion_board;
class lane_streams;
class peer_directory;
class timeline;

// Spawns the runner of `dev`, reporting to `report_to` (the executor; in a child, its pusher) as
// lane `lane`; host operands are offsets into the store at [store_base, store_base + store_size).
// With pin_store, a CUDA stream registers the store, so that copies between it and the GPU run at
// pinned-memory speed (each 64 MiB chunk is pinned when a copy first touches it). With a timeline, each batch and each operator in it is a
// span on the track (this process, lane); on CUDA an operator's span is its launch, and the
// synchronize before an acknowledgement is a span of its own. With a board, each acknowledgement
// is published there too (actors/batch_runner.hpp). With `linger`, once it has acknowledged
// everything it watches its mailbox that long before it goes back to sleep on it, so that the
// next batch of a busy runtime finds it awake (the shared-memory path's spin). With peers, it
// publishes its operands there and reads its peer lanes' from there (direct transfers). In a
// child, a read of another child's export waits for it as `exports` says.
stream_actor spawn_stream_actor(caf::actor_system& sys, runner_answers_actor report_to,
                                uint32_t lane, device dev, std::byte* store_base,
                                std::size_t store_size, bool pin_store,
                                std::shared_ptr<ag::timeline> timeline = nullptr,
                                completion_board* board = nullptr,
                                std::chrono::nanoseconds linger = {},
                                std::shared_ptr<peer_directory> peers = nullptr,
                                export_wait_policy exports = {},
                                std::shared_ptr<lane_streams> streams = nullptr,
                                step_policy steps = {});

} // namespace ag
