// flush_gate: when the executor's flush (the end of a mailbox drain) dispatches at once and when
// it first waits a moment for what the user's thread sends right behind (the shared-memory path,
// where the executor is awake to see it). What comes right behind a submit is usually the copy of
// its result to the host and the wait for it: in the same batch, the runner runs both and
// synchronizes once. Releases alone (the temporaries of a read going) wait longer, for the
// operators that follow. A flush waits once at most, and not at all once a read or a sync came:
// the wait itself is the last message of a round trip. A plain class: the executor asks it, and
// tests drive it.
#pragma once

#include <algorithm>
#include <chrono>

namespace ag {

class flush_gate {
public:
  // How long the gate may hold a flush for what comes right behind (a few submits' worth).
  static constexpr std::chrono::nanoseconds gather{std::chrono::microseconds{2}};

  // linger: how long the executor watches its mailbox once idle (0: the gate never holds).
  explicit flush_gate(std::chrono::nanoseconds linger) noexcept : linger_(linger) {}

  // How long the executor watches its mailbox once idle.
  std::chrono::nanoseconds linger() const noexcept { return linger_; }

  // A read or a sync arrived: the next flush goes out at once, and a user's thread now waits for
  // an answer (until answered()).
  void wait_arrived() noexcept {
    wait_arrived_ = true;
    awaited_ = true;
  }
  // A runner's acknowledgement came: what a user's thread waited for, most likely.
  void answered() noexcept { awaited_ = false; }
  // Whether a user's thread waits for an answer the executor will hear of (it naps for it).
  bool awaited() const noexcept { return awaited_; }

  // At a flush: how long to watch the mailbox before dispatching (0: dispatch now).
  // releases_alone: the flush would send releases and nothing else.
  std::chrono::nanoseconds hold(bool releases_alone) noexcept {
    const bool waiting = wait_arrived_;
    wait_arrived_ = false;
    if (held_ || waiting || linger_.count() <= 0)
      return std::chrono::nanoseconds{0};
    return releases_alone ? linger_ : std::min(linger_, gather);
  }

  // Something came while the flush was held: it goes out once that is handled, and is not held
  // again.
  void held() noexcept { held_ = true; }
  // The flush went out.
  void dispatched() noexcept { held_ = false; }

private:
  std::chrono::nanoseconds linger_;
  bool held_ = false;
  bool wait_arrived_ = false;
  bool awaited_ = false;
};

} // namespace ag
