// stream_actor: one device's runner (the seed's KernelStream + NaiveRunner behind
// PerDeviceThreadNodeRunner; in process mode the same actor runs inside each child). Runs each
// batch in order on its kernel stream, releases the batch's no-hold operands, acknowledges.
//
//   starting --stream created--> ready (sends ready) --execute--> running --ack--> ready
//       |                                   |  an op fails: failed sent, later ops skipped,
//       +--stream fails: quits with         |  releases still honoured
//          device_failed (executor sees     +--exit--> stopped (operands freed, stream closed)
//          it as a down message)
//
// Spawned detached: a batch blocks its thread for as long as the kernels (or a CUDA sync) take.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"

namespace ag {

class timeline;

// Spawns the runner of `dev`, reporting to `report_to` (the executor; in a child, its pusher) as
// lane `lane`; host operands are offsets into the store at [store_base, store_base + store_size).
// With pin_store, a CUDA stream registers the store (cudaHostRegister) so that copies between it
// and the GPU run at pinned-memory speed. With a timeline, each batch and each operator in it is a
// span on the track (this process, lane); on CUDA an operator's span is its launch, and the batch's
// ends after the stream's synchronize.
caf::actor spawn_stream_actor(caf::actor_system& sys, caf::actor report_to, uint32_t lane,
                              device dev, std::byte* store_base, std::size_t store_size,
                              bool pin_store, std::shared_ptr<ag::timeline> timeline = nullptr);

} // namespace ag
