// operator_mark: what a child's main thread sees of its runner, without a board of its own: the
// operator (or synchronize) the runner is inside (0: between them). The main thread beats the
// child's heartbeat (the board's, or a Pulse on the sockets) often only while an operator runs,
// and sleeps long slices otherwise; a runner that enters an operator while the main thread
// dozes wakes it, once, so that the first beat is not a long slice late. A Dekker pair: the main
// thread announces its doze and then looks at the mark, the runner sets the mark and then looks
// at the doze (both sequentially consistent), so one of them always sees the other.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <utility>

namespace ag {

class operator_mark {
public:
  // How the runner wakes the main thread (called on the runner's thread).
  explicit operator_mark(std::function<void()> wake = {}) : wake_(std::move(wake)) {}

  // The runner: inside operator `index` (> 0) from now on.
  void enter(uint64_t index) noexcept {
    running_.store(index, std::memory_order_seq_cst);
    if (dozing_.load(std::memory_order_seq_cst)
        && dozing_.exchange(false, std::memory_order_seq_cst) && wake_)
      wake_();
  }
  // The runner: out of it.
  void leave() noexcept { running_.store(0, std::memory_order_relaxed); }

  uint64_t running() const noexcept { return running_.load(std::memory_order_relaxed); }

  // The main thread, before a long sleep: true when it may doze (nothing runs; a runner that
  // enters an operator from now on wakes it), false when an operator runs (sleep short).
  bool doze() noexcept {
    dozing_.store(true, std::memory_order_seq_cst);
    if (running_.load(std::memory_order_seq_cst) == 0)
      return true;
    dozing_.store(false, std::memory_order_relaxed);
    return false;
  }
  // The main thread, awake again (whether woken or at the end of its slice).
  void awake() noexcept { dozing_.store(false, std::memory_order_relaxed); }

private:
  std::atomic<uint64_t> running_{0};
  std::atomic<bool> dozing_{false};
  std::function<void()> wake_;
};

} // namespace ag
