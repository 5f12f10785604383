// The shared-memory path under faults that only it has: a broadcast ring too small for what a
// stopped or slow child has not read. A frame waits for room (in order) rather than overwrite
// what a child has yet to read; a stopped child is failed by the watchdog and dropped from the
// ring, and its sibling's work then goes on; a slow child gets every frame intact. And a child
// that reads nothing because it executes one long operator is left alone by the watchdog, unless
// it is stopped. Real children on sim devices; what the user sees is checked, and that nothing is
// left behind.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using Catch::Contains;
using namespace std::chrono_literals;

namespace {

// Process mode on the shared-memory path with the smallest ring (64 KiB: about ten broadcasts of
// a hundred operators each).
ag::graph_option small_ring(std::chrono::milliseconds progress_timeout) {
  auto opt = sim_options(true, "sim:0,sim:1", 30000ms);
  opt.transport = ag::transport::shared_memory;
  opt.ring_bytes = std::size_t{64} << 10;
  opt.progress_timeout = progress_timeout;
  return opt;
}

// 20 000 adds on `where`, read every 100: many broadcasts, each read back.
std::vector<float> count_up(ag::runtime& rt, const ag::device& where) {
  auto x = rt.full({16}, 0.0f, where);
  const auto one = rt.full({16}, 1.0f, where);
  for (int i = 0; i < 20000; ++i) {
    x = x + one;
    if (i % 100 == 99)
      REQUIRE(x.to_vector() == std::vector<float>(16, float(i + 1)));
  }
  return x.to_vector();
}

// Process mode on the shared-memory path with sim:0 alone and a watchdog of 1 s.
ag::graph_option one_child(std::chrono::milliseconds progress_timeout) {
  auto opt = sim_options(true, "sim:0", 60000ms * tsan_slow);
  opt.transport = ag::transport::shared_memory;
  opt.progress_timeout = progress_timeout;
  return opt;
}

// The side of a matmul that keeps sim:0 busy for several times progress_timeout (3072: about 4 s
// on one core of the build machine). ThreadSanitizer and AddressSanitizer run the loop tens of
// times slower (3072 passed the 60 s wait under AddressSanitizer), so a third of the side (a 27th
// of the work) takes seconds there too.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr std::size_t long_side = 1024;
#else
constexpr std::size_t long_side = 3072;
#endif

} // namespace

TEST_CASE("a child busy with one long operator is not failed by the watchdog while the operators "
          "after it wait, and every result is right",
          "[ring]") {
  {
    ag::runtime rt{one_child(1000ms)};
    const auto sim0 = ag::device::sim(0);
    const auto a = rt.full({long_side, long_side}, 1.0f, sim0);
    const auto b = rt.full({long_side, long_side}, 1.0f, sim0);
    const auto c = a.matmul(b);
    auto x = rt.full({16}, 0.0f, sim0);
    const auto one = rt.full({16}, 1.0f, sim0);
    for (int i = 0; i < 10; ++i) { // each a broadcast the busy child does not read for seconds
      std::this_thread::sleep_for(150ms);
      x = x + one;
    }
    CHECK(x.to_vector() == std::vector<float>(16, 10.0f));
    const auto product = c.to_vector();
    REQUIRE(product.size() == long_side * long_side);
    CHECK(std::all_of(product.begin(), product.end(),
                      [](float v) { return v == float(long_side); }));
    CHECK_NOTHROW(rt.sync());
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a child stopped in the middle of a long operator is still failed for making no "
          "progress and killed, and nothing is left behind",
          "[ring]") {
  {
    ag::runtime rt{one_child(1000ms)};
    const pid_t child = runner_of_lane(1);
    REQUIRE(child > 0);
    const auto sim0 = ag::device::sim(0);
    const auto a = rt.full({long_side, long_side}, 1.0f, sim0);
    const auto b = rt.full({long_side, long_side}, 1.0f, sim0);
    const long before = process_cpu_ticks(child);
    const auto c = a.matmul(b);
    // Stopped once it has spent half a second on the fills and the matmul (seconds long): in the
    // middle of the matmul, its running mark set.
    REQUIRE(within(10000ms, [&] { return process_cpu_ticks(child) - before >= 50; }));
    REQUIRE(stop_process(child));
    auto x = rt.full({16}, 0.0f, sim0);
    const auto one = rt.full({16}, 1.0f, sim0);
    for (int i = 0; i < 10; ++i) {
      std::this_thread::sleep_for(150ms);
      x = x + one;
    }
    CHECK_THROWS_WITH(x.to_vector(), Contains("sim:0 made no progress for 1000 ms")
                                       && Contains("its child is killed"));
    CHECK_THROWS_WITH(c.to_vector(), Contains("sim:0 made no progress for 1000 ms"));
    CHECK(within(5000ms, [&] { return exited(child); }));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a stopped child fills the ring: frames wait for room, the watchdog fails and drops it, "
          "and its sibling's results are right",
          "[ring]") {
  {
    ag::runtime rt{small_ring(1000ms)};
    const pid_t child = runner_of_lane(1);
    REQUIRE(child > 0);
    REQUIRE(stop_process(child));
    CHECK(count_up(rt, ag::device::sim(1)) == std::vector<float>(16, 20000.0f));
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:0 made no progress for 1000 ms")
                                   && Contains("its child is killed"));
    CHECK(within(5000ms, [&] { return exited(child); }));
    // The survivor still answers on the ring.
    CHECK(rt.full({2}, 7.0f, ag::device::sim(1)).to_vector() == std::vector<float>{7.0f, 7.0f});
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a child stopped and continued over and over reads every frame of a small ring intact",
          "[ring]") {
  {
    ag::runtime rt{small_ring(10000ms)};
    const pid_t child = runner_of_lane(1);
    REQUIRE(child > 0);
    std::atomic<bool> done{false};
    std::thread slow{[&] { // sim:0 reads in bursts, far behind the writer in between
      while (!done) {
        ::kill(child, SIGSTOP);
        std::this_thread::sleep_for(20ms);
        ::kill(child, SIGCONT);
        std::this_thread::sleep_for(5ms);
      }
      ::kill(child, SIGCONT);
    }};
    std::vector<float> got0, got1;
    try {
      got0 = count_up(rt, ag::device::sim(0));
      got1 = count_up(rt, ag::device::sim(1));
    } catch (...) {
      done = true;
      slow.join();
      throw;
    }
    done = true;
    slow.join();
    CHECK(got0 == std::vector<float>(16, 20000.0f));
    CHECK(got1 == std::vector<float>(16, 20000.0f));
    CHECK_NOTHROW(rt.sync());
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a ring that is not a power of two of at least 64 KiB is refused, naming the option",
          "[ring]") {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{4096}, std::size_t{100000}}) {
    auto opt = small_ring(1000ms);
    opt.ring_bytes = bytes;
    CHECK_THROWS_WITH(ag::runtime{opt}, Contains("graph_option::ring_bytes")
                                          && Contains(std::to_string(bytes)));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}
