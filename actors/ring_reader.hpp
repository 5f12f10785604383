// ring_reader: a child's runner on the shared-memory path: one detached actor whose thread takes
// each frame from the broadcast ring (spinning a while, then sleeping on the ring's futex) and
// launches the batch of its own lane there and then, on the batch runner the stream actor uses.
// It acknowledges to the pusher and on the completion board once the ring holds nothing more for
// it, reports how far it has read at most every 20 ms (the controller reads the ring's cursors
// itself; the report wakes it for its bound and watchdog), and tells the
// child's main thread when a Destroy frame arrives. Ids must increase from frame to frame; a
// malformed frame or a dropped reader is a protocol error: reported once, nothing more runs.
//
//   starting --runner created--> reading (ready sent) --destroy frame--> main told; reads no more
//       |                            |
//       +--stream fails: quits with  +--protocol error: failed sent, board marked; reads no more
//          device_failed
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include <caf/fwd.hpp>

#include "actors/batch_runner.hpp"

namespace ag {

class shm_channel;

struct ring_reader_setup {
  batch_runner_setup runner;          // its board: the channel's
  std::shared_ptr<shm_channel> channel;
  uint32_t reader = 0;                // its cursor in the ring
  std::chrono::nanoseconds spin{std::chrono::microseconds{50}};
};

caf::actor spawn_ring_reader(caf::actor_system& sys, ring_reader_setup setup, caf::actor pusher,
                             caf::actor main);

} // namespace ag
