#include "apps/ag-bench/shm_floor.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <new>
#include <vector>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actorgraph/error.hpp"
#include "apps/ag-bench/stats.hpp"
#include "ipc/futex_wait.hpp"

namespace ag::bench {

namespace {

// One cache line each way, each with its futex word (wake_word is a line of its own).
struct pingpong {
  wake_word ping; // changes: the round the controller is in
  wake_word pong; // changes: the round the peer answered
  std::atomic<uint32_t> spin_ns{0};
  std::atomic<uint32_t> quit{0};
};

using clock_type = std::chrono::steady_clock;

bool wait_for(wake_word& w, uint32_t value, std::chrono::nanoseconds spin,
              clock_type::time_point deadline) {
  return wait_until(w, [&] { return w.changes.load(std::memory_order_acquire) == value; },
                    deadline, spin_policy{spin});
}

[[noreturn]] void peer(pingpong& p) {
  uint32_t round = 0;
  for (;;) {
    const auto deadline = clock_type::now() + std::chrono::seconds{10};
    const std::chrono::nanoseconds spin{p.spin_ns.load(std::memory_order_acquire)};
    if (!wait_for(p.ping, round + 1, spin, deadline) || p.quit.load() != 0)
      ::_exit(0);
    ++round;
    notify_all(p.pong); // pong.changes becomes round
  }
}

// Median round trip of `n` pings with both sides spinning `spin` before they sleep.
double measure(pingpong& p, uint32_t& round, int n, std::chrono::nanoseconds spin) {
  p.spin_ns.store(static_cast<uint32_t>(spin.count()), std::memory_order_release);
  std::vector<double> trips;
  trips.reserve(n);
  for (int i = 0; i < n + 100; ++i) { // the first 100 warm up
    const auto t0 = clock_type::now();
    ++round;
    notify_all(p.ping);
    if (!wait_for(p.pong, round, spin, clock_type::now() + std::chrono::seconds{10}))
      throw error("shared-memory floor: the peer did not answer ping " + std::to_string(round)
                  + " within 10 s");
    if (i >= 100)
      trips.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
  }
  return median(std::move(trips));
}

} // namespace

shm_floor measure_shm_floor(bool quick) {
  void* mem = ::mmap(nullptr, sizeof(pingpong), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                     -1, 0);
  if (mem == MAP_FAILED)
    throw error("shared-memory floor: mmap failed");
  auto* p = new (mem) pingpong{};
  const pid_t child = ::fork();
  if (child < 0) {
    ::munmap(mem, sizeof(pingpong));
    throw error("shared-memory floor: fork failed");
  }
  if (child == 0)
    peer(*p);
  shm_floor f;
  f.round_trips = quick ? 2000 : 20000;
  uint32_t round = 0;
  try {
    // A long spin: neither side sleeps while the other answers.
    f.spin_us = measure(*p, round, f.round_trips, std::chrono::milliseconds{100});
    f.futex_us = measure(*p, round, f.round_trips, std::chrono::nanoseconds{0});
    f.spin_then_futex_us = measure(*p, round, f.round_trips, std::chrono::microseconds{50});
  } catch (...) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ::munmap(mem, sizeof(pingpong));
    throw;
  }
  p->quit.store(1);
  ++round;
  notify_all(p->ping);
  int status = 0;
  for (int i = 0; i < 500 && ::waitpid(child, &status, WNOHANG) == 0; ++i)
    ::usleep(10000);
  if (::waitpid(child, &status, WNOHANG) == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  ::munmap(mem, sizeof(pingpong));
  return f;
}

} // namespace ag::bench
