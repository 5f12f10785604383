// flow_control: the bound on work in flight between the user's threads and the runners, so that the
// controller's memory stays bounded whatever the user submits. A user's thread takes one credit on
// the operator's lane, and the bytes of an upload, before it sends the operator to the executor; the
// executor gives them back as the runners acknowledge (bytes once they are copied into the store).
// A full lane blocks only the threads submitting to it; `hold` (a child behind in reading its
// broadcasts, which every child receives) blocks every submitter until `resume`. Plain class: the
// controller and the executor share it; tests drive it without an actor system.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "graph/deadline.hpp"

namespace ag {

class flow_control {
public:
  struct limits {
    uint64_t ops_per_lane = uint64_t{1} << 16; // operators not yet acknowledged, per lane
    uint64_t bytes = uint64_t{256} << 20;      // upload bytes not yet copied into the store
  };

  // lane_names[i] names lane i in errors ("cpu", "sim:0", ...).
  flow_control(std::vector<std::string> lane_names, limits lim);

  // User's thread: takes a credit on `lane` and `bytes` of upload room, blocking while the lane is
  // full, the bytes do not fit (an upload larger than the bound passes alone) or the flow is held.
  // Returns empty once taken, or why not: `timeout` passed first (milliseconds::max(): no
  // deadline), or the flow was closed. Nothing is taken then.
  std::string acquire(uint32_t lane, uint64_t bytes, std::chrono::milliseconds timeout);

  // Executor: gives credits back.
  void release(uint32_t lane, uint64_t ops) noexcept;
  void release_bytes(uint64_t bytes) noexcept;

  // Executor: while held, every acquire waits; `why` goes into the error of one that times out.
  void hold(std::string why);
  void resume() noexcept;
  bool held() const;

  // Every waiter, and every later acquire, throws ag::error(why). The first reason stays.
  void close(std::string why) noexcept;

  struct snapshot {
    std::vector<uint64_t> ops; // per lane
    uint64_t bytes = 0;
    uint64_t blocked = 0; // acquires that had to wait, since the start
  };
  snapshot stats() const;

  const limits& bounds() const noexcept { return lim_; }

private:
  bool bytes_fit(uint64_t bytes) const noexcept; // under the mutex
  std::string why_full(uint32_t lane, uint64_t bytes) const;
  bool take(uint32_t lane) noexcept; // one credit, if the lane has room (lock-free)
  void wake() noexcept;                  // wakes the waiters, if any

  const std::vector<std::string> names_;
  const limits lim_;
  std::vector<std::atomic<uint64_t>> ops_; // per lane
  std::atomic<bool> held_{false};
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> waiters_{0};
  mutable std::mutex mtx_; // guards what follows, and the waits
  std::condition_variable cv_;
  uint64_t bytes_ = 0;
  uint64_t blocked_ = 0;
  std::string held_why_;
  std::string closed_why_;
};

} // namespace ag
