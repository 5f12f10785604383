// ticket_slot: where the executor leaves the wait_ticket a user's thread asked for, in this
// process's memory: the thread spins a while, then sleeps on the slot's futex word, instead of
// blocking for a reply message (a second actor hop on the path of every wait). Shared between
// the asking thread and the executor: a thread that gave up on it leaves it to the executor.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

#include <caf/allowed_unsafe_message_type.hpp>

#include "actors/plan_records.hpp"
#include "ipc/futex_wait.hpp"

namespace ag {

class ticket_slot {
public:
  // The executor: the ticket, once.
  void fill(wait_ticket t) noexcept {
    ticket_ = std::move(t);
    ready_.store(1, std::memory_order_release);
    notify_all(word_);
  }

  // The asking thread: true once filled (then ticket() is it), false past the deadline.
  bool wait(std::chrono::steady_clock::time_point deadline, spin_policy spin) noexcept {
    return wait_until(word_, [this] { return ready_.load(std::memory_order_acquire) != 0; },
                      deadline, spin);
  }
  const wait_ticket& ticket() const noexcept { return ticket_; }

private:
  wake_word word_;
  std::atomic<uint32_t> ready_{0};
  wait_ticket ticket_;
};

using ticket_slot_ptr = std::shared_ptr<ticket_slot>;

} // namespace ag

// A pointer between threads of one process, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(ag::ticket_slot_ptr)
