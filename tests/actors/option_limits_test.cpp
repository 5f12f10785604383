// Options at and past their bounds: a duration too large for the clocks it is added to saturates
// at its documented ceiling (graph_option::spin_wait at max_spin_wait), and a size outside its
// range is refused naming the option, its range and the value given. Real runtimes in both modes.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using Catch::Contains;
using namespace std::chrono_literals;

namespace {

std::chrono::microseconds cpu_time_of_this_process() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return std::chrono::seconds{ru.ru_utime.tv_sec + ru.ru_stime.tv_sec}
         + std::chrono::microseconds{ru.ru_utime.tv_usec + ru.ru_stime.tv_usec};
}

} // namespace

TEST_CASE("spin_wait of microseconds::max() runs in both modes and an idle runtime does not spin",
          "[process]") {
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      auto opt = sim_options(process);
      opt.spin_wait = std::chrono::microseconds::max();
      ag::runtime rt{opt};
      CHECK(rt.option().spin_wait == ag::max_spin_wait);
      const auto x = rt.full({4}, 2.0f, ag::device::sim(0)) + rt.full({4}, 1.0f, ag::device::sim(0));
      CHECK(x.to_vector() == std::vector<float>(4, 3.0f));
      rt.sync();
      // Idle for a second: past the ceiling every wait sleeps, so the waiting threads (the
      // stream actors here, the children's ring readers in process mode) cost next to nothing.
      const auto before = cpu_time_of_this_process();
      std::this_thread::sleep_for(1s);
      const auto spent = cpu_time_of_this_process() - before;
      CHECK(spent < 300ms);
      for (const pid_t child : runner_children()) {
        const auto ticks = process_cpu_ticks(child);
        std::this_thread::sleep_for(500ms);
        CHECK(process_cpu_ticks(child) - ticks < 15); // 150 ms of 500 at 100 ticks a second
      }
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

TEST_CASE("a store smaller than the smallest one is refused naming store_bytes and the minimum",
          "[process]") {
  for (const bool process : {false, true})
    for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4095}}) {
      auto opt = sim_options(process);
      opt.store_bytes = bytes;
      CHECK_THROWS_WITH(ag::runtime{opt}, Contains("graph_option::store_bytes " + std::to_string(bytes))
                                            && Contains("4096"));
    }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a ring outside 64 KiB to 2 GiB, or not a power of two, is refused naming its range",
          "[process]") {
  for (const std::size_t bytes : {std::size_t{4} << 30, std::size_t{1} << 40, std::size_t{3} << 20,
                                  std::size_t{32} << 10}) {
    auto opt = sim_options(true);
    opt.transport = ag::transport::shared_memory;
    opt.ring_bytes = bytes;
    CHECK_THROWS_WITH(ag::runtime{opt},
                      Contains("graph_option::ring_bytes " + std::to_string(bytes))
                        && Contains("power of two from 65536 (64 KiB) to 2147483648 (2 GiB)")
                        && !Contains("store_bytes"));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}
