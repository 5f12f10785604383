#include "ipc/futex_wait.hpp"

#include <cerrno>
#include <climits>
#include <ctime>

#include <linux/futex.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ag {

namespace {

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) noexcept {
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

} // namespace

void notify_all(wake_word& w) noexcept {
  w.changes.fetch_add(1, std::memory_order_seq_cst);
  if (w.sleepers.load(std::memory_order_seq_cst) != 0)
    futex(&w.changes, FUTEX_WAKE, INT_MAX, nullptr);
}

void nap_precisely() noexcept { ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); }

namespace detail {

void nap(std::chrono::nanoseconds for_at_most) noexcept {
  if (for_at_most.count() <= 0)
    return;
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(for_at_most.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(for_at_most.count() % 1000000000);
  ::nanosleep(&ts, nullptr); // EINTR: a shorter nap
}

void futex_sleep(wake_word& w, uint32_t seen, std::chrono::nanoseconds for_at_most) noexcept {
  if (for_at_most.count() <= 0)
    return;
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(for_at_most.count() / 1000000000);
  ts.tv_nsec = static_cast<long>(for_at_most.count() % 1000000000);
  futex(&w.changes, FUTEX_WAIT, seen, &ts); // EAGAIN (changed), EINTR, ETIMEDOUT: all a return
}

void yield() noexcept { ::sched_yield(); }

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

} // namespace detail

} // namespace ag
