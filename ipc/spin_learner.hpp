// spin_learner: how long one waiter's spins should be, learnt from how its waits ended. A wait
// that ended within the bound (while spinning, or soon after it fell asleep) says that a spin that
// long pays; one that ended long after the bound says that the spin was wasted, and the allowance
// halves. Once the allowance is under a microsecond the waiter sleeps at once, but for one wait in
// 16, which spins the whole bound again to find out whether waits have become short. One learner
// per waiting thread (an actor's state, a user's thread's thread_local): not shared.
#pragma once

#include <chrono>
#include <cstdint>

namespace ag {

class spin_learner {
public:
  static constexpr std::chrono::nanoseconds least{std::chrono::microseconds{1}};
  static constexpr uint32_t probe_every = 16;

  // How long the next wait may spin, at most `bound`.
  std::chrono::nanoseconds allowance(std::chrono::nanoseconds bound) noexcept;
  // The wait ended after `waited`, while it spun.
  void caught(std::chrono::nanoseconds waited) noexcept;
  // The wait ended after `waited`, once it had stopped spinning (asleep, or denied a CPU).
  void slept(std::chrono::nanoseconds waited, std::chrono::nanoseconds bound) noexcept;
  // The spin ended with nothing come, and when it came is not known (an actor's linger).
  void missed(std::chrono::nanoseconds bound) noexcept;

  // What it allows now (the bound until it learnt otherwise: negative).
  std::chrono::nanoseconds current() const noexcept { return std::chrono::nanoseconds{allow_ns_}; }

private:
  int64_t now_or(std::chrono::nanoseconds bound) const noexcept {
    return allow_ns_ < 0 ? bound.count() : allow_ns_;
  }

  int64_t allow_ns_ = -1; // -1: the bound
  uint32_t skipped_ = 0;
};

} // namespace ag
