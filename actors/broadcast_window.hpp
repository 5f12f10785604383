// broadcast_window: the Execute broadcasts that some child has not read yet, with the bytes each
// added, so that the planner can say how far behind a child is in bytes. The PUB socket queues
// for a child without limit (sndhwm = 0): this window is what bounds it (graph_option::
// max_queued_bytes). Sequence numbers count broadcasts from 1; a child reports how many it read.
#pragma once

#include <cstdint>
#include <deque>

namespace ag {

class broadcast_window {
public:
  // Records a broadcast of `bytes`; returns its sequence number.
  uint64_t sent(uint64_t bytes);

  // The number of broadcasts sent so far.
  uint64_t seq() const noexcept { return seq_; }

  // Bytes of the broadcasts after the first `read`: what a child that read `read` has yet to read.
  // `read` must not be below what forget() was last given.
  uint64_t behind_bytes(uint64_t read) const;

  // Forgets the first `read_by_all` broadcasts (every child has read them).
  void forget(uint64_t read_by_all);

private:
  struct sent_rec {
    uint64_t seq;
    uint64_t cumulative; // bytes of every broadcast up to this one
  };
  std::deque<sent_rec> window_; // after base_seq_, which every child has read
  uint64_t base_seq_ = 0;
  uint64_t base_bytes_ = 0;
  uint64_t seq_ = 0;
  uint64_t bytes_ = 0;
};

} // namespace ag
