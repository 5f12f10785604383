// ring_publisher: the controller's side of the broadcast ring (the shared-memory path of the
// seed's RemoteRunnerPublisher). A frame on the ring is what it is on the PUB socket, the 16-byte
// wire header and the body, in one message; its id comes from the same sequence as the socket's
// frames (Hellos), so that every frame of a runtime has its own id, and it is recorded in the
// trace as a published frame is. A frame that finds no room (a child behind) waits in a queue,
// in order, until flush() finds room: the ring never overwrites what a child has not read, and the
// planner's bound on what a child may be behind (graph_option::max_queued_bytes) holds the
// submitters back long before the queue grows large. Thread-safe, though one thread writes it
// now: the owner of the lane topology (the executor, or ag-replay), Execute frames and Destroy.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "ipc/broadcast_ring.hpp"
#include "ipc/wire.hpp"

namespace ag {

class shm_channel;

namespace trace {
class writer;
} // namespace trace

class ring_publisher {
public:
  // Writes to the channel's ring, which it keeps mapped as long as it lives.
  ring_publisher(std::shared_ptr<shm_channel> channel, std::shared_ptr<trace::writer> trace);

  // The id of a frame sent on the socket instead.
  uint64_t next_id();
  // Publishes the frame, or queues it behind those still waiting for room: true when nothing
  // waits (then nobody need flush()). Throws ag::error for a body larger than the ring's largest
  // frame less the header.
  bool publish(wire::msg_type type, wire::bytes body);
  // Writes what waits for room, in order, as far as there is room: true when nothing waits.
  bool flush();
  // The child reading as `reader` is gone: the ring no longer waits for it.
  void drop(uint32_t reader);
  // A new child reads as `reader` (its lane's child was started again): it reads what is written
  // from now on. Frames still waiting for room are written for it too.
  void rejoin(uint32_t reader);
  // Execute frames reader `reader` has read, counted from its position in the ring (the bytes it
  // read past, which give the writer room), not from a count it keeps: a child that claims to
  // have read more than it did gives that room away, and cannot hold frames back in the
  // controller while it looks caught up.
  uint64_t executes_read(uint32_t reader) const;
  // Execute frames written to the ring (not those waiting for room).
  uint64_t executes_written() const;

private:
  bool try_publish(wire::msg_type type, const wire::bytes& body); // mu_ held

  struct frame {
    wire::msg_type type;
    wire::bytes body;
  };
  mutable std::mutex mu_;
  std::deque<frame> waiting_;
  std::shared_ptr<shm_channel> channel_;
  broadcast_ring& ring_;
  std::size_t max_body_;
  uint64_t next_id_ = 1;
  std::atomic<uint64_t> executes_written_{0}; // read on every flush of the executor, unlocked
  // Where each Execute frame written ends in the ring and how many were written up to it, from the
  // least reader's position on; read_base_: the Executes every reader has read past.
  struct written_end {
    uint64_t end;
    uint64_t executes;
  };
  std::deque<written_end> ends_;
  uint64_t read_base_ = 0;
  std::shared_ptr<trace::writer> trace_;
};

} // namespace ag
