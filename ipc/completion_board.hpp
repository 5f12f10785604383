// completion_board: how far each lane's runner got, in memory the waiting threads read directly
// (shared memory in process mode, so that a child's acknowledgement reaches a waiting user thread
// without a socket or an actor). Per lane: the operators and the entries (operators and releases)
// of the batches it acknowledged, whether it failed (the index of the failing operator), which
// operator (or synchronize) it is inside now, and a heartbeat its child's main thread keeps up,
// so that the controller's watchdog tells a child busy with one long operator from a stopped one.
// One fault count for the whole runtime: the controller bumps it whenever it learns of a failure
// or stops, so that a wait taken before (a wait_ticket) goes back to the executor for its answer.
//
// Order: a runner marks its lane failed before it publishes the counts of the batches after the
// failure (release), and a waiter reads the counts before the failure mark and the fault count
// (acquire): a count that passed a target is never read as success when the operator it waited
// for did not run. A runner that reaches an await operator publishes the operators it ran before
// it, then waits here for another lane's count: the order between local lanes needs no round trip
// through the executor. Layout: docs/PROTOCOL.md, "The shared-memory path".
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ipc/futex_wait.hpp"

namespace ag {

class completion_board {
public:
  struct header;
  struct lane_slot;

  static std::size_t bytes_for(uint32_t lanes);
  // Lays a board out in `memory` (bytes_for(lanes) bytes, 64-byte aligned).
  static completion_board format(void* memory, std::size_t bytes, uint32_t lanes);
  // The board laid out in `memory`; throws ag::error when it is not one or does not fit.
  static completion_board attach(void* memory, std::size_t bytes);

  completion_board() = default;
  explicit operator bool() const noexcept { return h_ != nullptr; }
  uint32_t lanes() const noexcept;

  // -- a lane's runner --------------------------------------------------------------------------
  // Its batches acknowledged so far: `ops` operators and `entries` entries in all.
  void completed(uint32_t lane, uint64_t ops, uint64_t entries) noexcept;
  // Its operator `index` failed (0: the lane failed as a whole); it runs nothing more.
  void failed(uint32_t lane, uint64_t index) noexcept;
  // Wakes the waiters after a run of completed() calls.
  void notify() noexcept;
  // Wakes only the runners inside an await (what it published is part of a batch: the user's
  // threads wait for whole batches and sleep on).
  void notify_awaits() noexcept;
  // It runs operator `index` (1-based), or waits for its stream with `index` the last operator
  // launched; 0: it is between operators.
  void running(uint32_t lane, uint64_t index) noexcept;
  // Its child's main thread is alive: one more beat (at least every 50 ms; none while stopped).
  void beat(uint32_t lane) noexcept;
  // Where its threads take a seat to spin (ipc/spin_census.hpp).
  spin_seat_ref seat(uint32_t lane) noexcept;

  // -- the controller ---------------------------------------------------------------------------
  // How many CPUs the runtime's spinning threads share (0: no limit), before any runner starts.
  void count_cpus(uint32_t cpus) noexcept;
  uint32_t cpus() const noexcept;
  // Where the controller's threads take a seat to spin, and how many spin now.
  spin_seat_ref seat() noexcept;
  int32_t spinning() const noexcept;
  // The child of `lane` is gone: the seats it held are free again.
  void forget_seats(uint32_t lane) noexcept;
  // A failed lane runs again (its child was started anew) from `ops` operators and `entries`
  // entries, everything before counted as acknowledged: the counts first, then the failure mark
  // cleared, so that nothing waiting for the old counts reads the lane as healthy and behind.
  void restarted(uint32_t lane, uint64_t ops, uint64_t entries) noexcept;
  // Something failed, or the runtime stops: every ticket taken before is stale.
  void fault() noexcept;
  uint64_t faults() const noexcept;
  // The runtime stops: every runner's await ends (what it was to wait for will not be counted).
  void stop() noexcept;
  bool stopped() const noexcept;

  uint64_t ops(uint32_t lane) const noexcept;
  uint64_t entries(uint32_t lane) const noexcept;
  uint64_t failed_at(uint32_t lane) const noexcept; // 0: healthy; else index + 1
  bool lane_failed(uint32_t lane) const noexcept { return failed_at(lane) != 0; }
  uint64_t running_at(uint32_t lane) const noexcept; // 0: between operators; else the index
  uint64_t beats(uint32_t lane) const noexcept;

  // -- a waiting thread -------------------------------------------------------------------------
  enum class outcome {
    done,      // the target was reached and nothing failed
    stale,     // a fault or a failure: ask the executor
    timed_out, // the deadline passed first
  };
  // Lane `lane` acknowledged operator `index`, with no failure and no fault since `faults`.
  outcome wait_op(uint32_t lane, uint64_t index, uint64_t faults,
                  std::chrono::steady_clock::time_point deadline, spin_policy spin) noexcept;
  // Every lane l acknowledged entries[l] entries, likewise.
  outcome wait_entries(const std::vector<uint64_t>& entries, uint64_t faults,
                       std::chrono::steady_clock::time_point deadline, spin_policy spin) noexcept;

  // -- a runner awaiting another lane (an await operator, graph/op.hpp) -------------------------
  enum class await_outcome {
    reached,     // the lane acknowledged the operator
    lane_failed, // the lane failed: it will not run it (the controller taints what follows)
    stopped,     // the runtime stops
    timed_out,   // the deadline passed first
  };
  // Lane `lane` acknowledged operator `index`, or failed, or the runtime stopped. Faults of other
  // lanes do not end it.
  await_outcome await_op(uint32_t lane, uint64_t index,
                         std::chrono::steady_clock::time_point deadline,
                         spin_policy spin) noexcept;

private:
  completion_board(header* h, lane_slot* l) noexcept : h_(h), lanes_(l) {}
  template <class Reached>
  outcome wait(Reached reached, uint64_t faults, std::chrono::steady_clock::time_point deadline,
               spin_policy spin) noexcept;

  header* h_ = nullptr;
  lane_slot* lanes_ = nullptr;
};

// A board in this process's own memory (thread mode; the cpu lane's alone in tests).
class local_board {
public:
  explicit local_board(uint32_t lanes);
  local_board(const local_board&) = delete;
  local_board& operator=(const local_board&) = delete;
  completion_board& board() noexcept { return board_; }

private:
  std::vector<std::byte> memory_; // 64 bytes more than the board: aligned inside
  completion_board board_;
};

} // namespace ag
