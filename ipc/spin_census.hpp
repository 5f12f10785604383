// spin_census: how many threads of one runtime spin in a wait right now, controller and children
// together, against the CPUs there are. A waiter spins only while a CPU stays free for the threads
// doing the work it waits for: at most cpus - 1 spin at once, none on one CPU; the others sleep at
// once (ipc/futex_wait.hpp). It lives in the completion board, in shared memory in process mode.
// A child's seats are also counted in its lane's own word, so that the controller gives back what
// a killed child held (forget). Trivially constructible: zero is its initial state.
#pragma once

#include <atomic>
#include <cstdint>

namespace ag {

struct alignas(64) spin_census {
  std::atomic<int32_t> spinning{0};
  std::atomic<int32_t> cpus{0}; // 0: not counted, no limit
};

static_assert(std::atomic<int32_t>::is_always_lock_free, "the census is shared between processes");

// Where one waiter takes its seat: a census (none: no limit) and, for a child's threads, the
// count of its lane's seats.
struct spin_seat_ref {
  spin_census* census = nullptr;
  std::atomic<int64_t>* own = nullptr;
};

// One seat, for the length of a spin: taken when a CPU is left free, else not (then do not spin).
class spin_seat {
public:
  explicit spin_seat(spin_seat_ref ref) noexcept : ref_(ref) {
    if (ref_.census == nullptr || ref_.census->cpus.load(std::memory_order_relaxed) <= 0) {
      taken_ = true; // nothing to count against
      ref_ = {};
      return;
    }
    // Its own count first: a child killed between the two leaves the census one short, never
    // one over (forget() takes back what the lane's count says).
    if (ref_.own != nullptr)
      ref_.own->fetch_add(1, std::memory_order_relaxed);
    const int32_t before = ref_.census->spinning.fetch_add(1, std::memory_order_acq_rel);
    taken_ = before + 1 < ref_.census->cpus.load(std::memory_order_relaxed);
    if (!taken_)
      give_back();
  }
  ~spin_seat() {
    if (taken_)
      give_back();
  }
  spin_seat(const spin_seat&) = delete;
  spin_seat& operator=(const spin_seat&) = delete;

  explicit operator bool() const noexcept { return taken_; }

  // The controller, once the child counted in `own` is gone: gives back every seat it held.
  static void forget(spin_census& census, std::atomic<int64_t>& own) noexcept {
    const auto held = own.exchange(0, std::memory_order_acq_rel);
    if (held > 0)
      census.spinning.fetch_sub(static_cast<int32_t>(held), std::memory_order_acq_rel);
  }

private:
  void give_back() noexcept {
    if (ref_.census == nullptr)
      return;
    ref_.census->spinning.fetch_sub(1, std::memory_order_acq_rel);
    if (ref_.own != nullptr)
      ref_.own->fetch_sub(1, std::memory_order_relaxed);
  }

  spin_seat_ref ref_;
  bool taken_ = false;
};

} // namespace ag
