// futex_wait: how one thread waits for another, possibly in another process, to change something
// in shared memory: it spins for a bounded time (a wake-up costs several microseconds, a spin
// fractions of one), then sleeps on a futex word with its deadline. The word lives beside the data
// (a broadcast ring, a completion board) and counts changes; whoever changes the data bumps it and
// wakes sleepers only when there are any, so that a waiter that spins costs its writer no system
// call. Shared futexes (no FUTEX_PRIVATE_FLAG): the words are in memory mapped by several processes.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "ipc/spin_census.hpp"
#include "ipc/spin_learner.hpp"

namespace ag {

// A futex word and the count of threads sleeping on it, on a cache line of their own. Lives in
// shared memory: trivially constructible, zero is its initial state.
struct alignas(64) wake_word {
  std::atomic<uint32_t> changes{0};
  std::atomic<uint32_t> sleepers{0};
};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words are shared between processes");

// After changing what waiters look at (with release ordering or stronger): counts the change
// and wakes every sleeper.
void notify_all(wake_word& w) noexcept;

// How long a wait spins before it sleeps.
struct spin_policy {
  std::chrono::nanoseconds spin{std::chrono::microseconds{50}}; // the most it spins
  spin_seat_ref seat;             // spins only with a seat of this census (none: no limit)
  spin_learner* learner = nullptr; // spins as long as this waiter's waits say it pays (none: `spin`)
};

// Waits until done() returns true (then returns true) or the deadline passes (false): calls
// done() in a loop for the policy's spin time (as long as its learner allows, and only with a
// seat of its census), then sleeps on `w` between calls, at most `slice` at a time (a waiter also
// looks again after that long, should a writer have died between its change and its notify).
// done() must read with acquire ordering.
template <class Done>
bool wait_until(wake_word& w, Done done, std::chrono::steady_clock::time_point deadline,
                spin_policy policy = {},
                std::chrono::nanoseconds slice = std::chrono::milliseconds{100});

// Spins (stepping aside every 64 calls, as wait_until does) until done() returns true (true) or
// the policy's spin time passes (false); never sleeps. For a thread that has something else to
// sleep on (an actor's mailbox) and only looks a while before it goes back to it. A learner
// hears of a spin that ended empty as a miss.
template <class Done>
bool spin_until(Done done, spin_policy policy);

// Looks at done() between naps (sleeps of `nap`, on a timer) until it returns true (true) or
// `for_at_most` passes (false), under a seat of the census (without one: false at once). For a
// thread that expects what it waits for within a known while but longer than a spin: on an idle
// CPU of a virtual machine a thread that sleeps long wakes tens of microseconds late, one that
// naps wakes in time, at a fraction of a spinner's CPU. The caller cuts its thread's timer slack
// (nap_precisely), or a nap lasts 50 us more.
template <class Done>
bool nap_until(Done done, spin_seat_ref seat_ref, std::chrono::nanoseconds for_at_most,
               std::chrono::nanoseconds nap);

// Cuts the calling thread's timer slack to 1 us, for naps of a few microseconds.
void nap_precisely() noexcept;

namespace detail {
void nap(std::chrono::nanoseconds for_at_most) noexcept;
// Sleeps while w.changes == seen, up to `for_at_most` (a spurious return is allowed).
void futex_sleep(wake_word& w, uint32_t seen, std::chrono::nanoseconds for_at_most) noexcept;
void cpu_relax() noexcept;
void yield() noexcept;
} // namespace detail

namespace detail {
// Calls done() until it returns true (true) or `for_at_most` passes (false).
template <class Done>
bool spin_for(Done& done, std::chrono::nanoseconds for_at_most) {
  using clock = std::chrono::steady_clock;
  const auto spin_end = clock::now() + for_at_most;
  for (uint32_t i = 1;; ++i) {
    cpu_relax();
    if (done())
      return true;
    if ((i & 63) == 0) {
      if (clock::now() >= spin_end)
        return false;
      // A spinner never keeps a thread that could run from this core (the one it waits for,
      // on a machine with few cores): it steps aside every 64 looks.
      yield();
    }
  }
}

// How long this wait may spin: its learner's allowance, within what is left before `limit`.
inline std::chrono::nanoseconds spin_allowed(spin_policy& policy, std::chrono::nanoseconds limit) {
  auto allowed = std::min(policy.spin, limit);
  if (policy.learner != nullptr && allowed.count() > 0)
    allowed = policy.learner->allowance(allowed);
  return allowed;
}
} // namespace detail

template <class Done>
bool spin_until(Done done, spin_policy policy) {
  if (done())
    return true;
  const auto allowed = detail::spin_allowed(policy, policy.spin);
  if (allowed.count() <= 0)
    return false;
  const auto start = std::chrono::steady_clock::now();
  bool caught = false;
  {
    spin_seat seat{policy.seat};
    if (!seat)
      return false; // no CPU to spare: not a miss of the learner's
    caught = detail::spin_for(done, allowed);
  }
  if (policy.learner != nullptr) {
    if (caught)
      policy.learner->caught(std::chrono::steady_clock::now() - start);
    else
      policy.learner->missed(policy.spin);
  }
  return caught;
}

template <class Done>
bool nap_until(Done done, spin_seat_ref seat_ref, std::chrono::nanoseconds for_at_most,
               std::chrono::nanoseconds nap) {
  if (done())
    return true;
  if (for_at_most.count() <= 0)
    return false;
  spin_seat seat{seat_ref};
  if (!seat)
    return false;
  const auto end = std::chrono::steady_clock::now() + for_at_most;
  for (;;) {
    detail::nap(nap);
    if (done())
      return true;
    if (std::chrono::steady_clock::now() >= end)
      return false;
  }
}

template <class Done>
bool wait_until(wake_word& w, Done done, std::chrono::steady_clock::time_point deadline,
                spin_policy policy, std::chrono::nanoseconds slice) {
  using clock = std::chrono::steady_clock;
  if (done())
    return true;
  const auto start = clock::now();
  const auto allowed =
    detail::spin_allowed(policy, std::max(deadline - start, clock::duration::zero()));
  if (allowed.count() > 0) {
    spin_seat seat{policy.seat};
    if (seat && detail::spin_for(done, allowed)) {
      if (policy.learner != nullptr)
        policy.learner->caught(clock::now() - start);
      return true;
    }
  }
  for (;;) {
    const uint32_t seen = w.changes.load(std::memory_order_seq_cst);
    if (done()) {
      if (policy.learner != nullptr && policy.spin.count() > 0) // a wait with no spin teaches nothing
        policy.learner->slept(clock::now() - start, policy.spin);
      return true;
    }
    const auto now = clock::now();
    if (now >= deadline) {
      if (policy.learner != nullptr && policy.spin.count() > 0 && now - start > policy.spin)
        policy.learner->slept(now - start, policy.spin); // long: spinning would not have paid
      return false;
    }
    // Announce the sleep, then look again: a writer bumps `changes` before it reads `sleepers`
    // (both sequentially consistent), so either it sees this sleeper and wakes it, or the futex
    // sees the bumped word and does not sleep.
    w.sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (!done()) {
      const auto left = deadline - now;
      detail::futex_sleep(w, seen, left < slice ? std::chrono::nanoseconds{left} : slice);
    }
    w.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  }
}

} // namespace ag
