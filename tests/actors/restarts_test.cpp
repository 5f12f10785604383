// Restarts (graph_option::max_restarts) with real processes on sim devices: a child killed again
// and again while several threads submit is started again each time, the work in flight fails
// naming the device, tensors of the dead child say they were lost, later work runs on the new
// child, and past the bound the device stays failed. Nothing is left behind.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"
#include "tests/actors/submitters.hpp"

using namespace ag::test;
using Catch::Contains;
using namespace std::chrono_literals;

namespace {

ag::graph_option restarting(uint32_t max_restarts) {
  ag::graph_option opt;
  opt.devices = {ag::device::sim(0), ag::device::sim(1)};
  opt.per_device_per_process = true;
  opt.store_bytes = std::size_t{64} << 20;
  opt.wait_timeout = std::chrono::milliseconds{30000 * tsan_slow};
  opt.start_timeout = std::chrono::milliseconds{30000 * tsan_slow};
  opt.transport = transport_under_test();
  opt.max_restarts = max_restarts;
  return opt;
}

// The child of lane 1 (sim:0) once it is another than `old` (0: any), within the deadline.
pid_t next_child(pid_t old) {
  pid_t now = 0;
  within(std::chrono::milliseconds{30000 * tsan_slow}, [&] {
    now = runner_of_lane(1);
    return now > 0 && now != old;
  });
  return now == old ? 0 : now;
}

} // namespace

TEST_CASE("a child killed again and again while threads submit is started again each time",
          "[faults][restarts]") {
  constexpr int kills = 4;
  constexpr int threads = 3;
  {
    ag::runtime rt{restarting(kills)};
    submitters load{threads, "sim:0", [&](int t, int i) {
                      const float v = static_cast<float>(t * 1000 + i % 1000);
                      auto y = (rt.full({256}, v, ag::device::sim(0)) * 2.0f) + 0.0f;
                      return y.to_vector() == std::vector<float>(256, 2 * v);
                    }};
    pid_t child = next_child(0);
    REQUIRE(child > 0);
    auto lost = rt.full({16}, 7.0f, ag::device::sim(0));
    REQUIRE(lost.to_vector() == std::vector<float>(16, 7.0f));
    auto kept = rt.full({16}, 5.0f, ag::device::sim(1));
    for (int k = 1; k <= kills; ++k) {
      INFO("kill " << k);
      // Some work runs on this child before it is killed.
      REQUIRE(load.more_good(5, std::chrono::milliseconds{30000 * tsan_slow}));
      REQUIRE(::kill(child, SIGKILL) == 0);
      const pid_t next = next_child(child);
      REQUIRE(next > 0);
      child = next;
      REQUIRE(within(std::chrono::milliseconds{30000 * tsan_slow},
                     [&] { return rt.stats().restarts == static_cast<std::size_t>(k); }));
    }
    REQUIRE(load.more_good(5, std::chrono::milliseconds{30000 * tsan_slow})); // the last child
    load.stop();
    for (const auto& o : load.odd())
      CHECK(o.empty());
    CHECK(load.wrong() == 0);
    CHECK(rt.stats().restarts == kills);
    // What lived on a dead child is lost, and says so; the other device's is whole.
    CHECK_THROWS_WITH(lost.to_vector(),
                      Contains("sim:0") && Contains("lost when sim:0 was restarted"));
    CHECK_THROWS_WITH((lost + lost).to_vector(), Contains("lost when sim:0 was restarted"));
    CHECK(kept.to_vector() == std::vector<float>(16, 5.0f));
    try { // the failures are reported once, by the next sync
      rt.sync();
    } catch (const ag::error&) {
    }
    CHECK((rt.full({8}, 2.0f, ag::device::sim(0)) * 3.0f).to_vector()
          == std::vector<float>(8, 6.0f));
    CHECK((kept.to(ag::device::sim(0)) + 1.0f).to_vector() == std::vector<float>(16, 6.0f));
    CHECK_NOTHROW(rt.sync());
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("past max_restarts a device stays failed, and without restarts it never comes back",
          "[faults][restarts]") {
  const uint32_t max = GENERATE(0u, 1u);
  INFO("max_restarts " << max);
  {
    ag::runtime rt{restarting(max)};
    for (uint32_t k = 0; k <= max; ++k) {
      REQUIRE((rt.full({4}, 1.0f, ag::device::sim(0)) + 1.0f).to_vector()
              == std::vector<float>(4, 2.0f));
      const pid_t child = runner_of_lane(1);
      REQUIRE(child > 0);
      REQUIRE(::kill(child, SIGKILL) == 0);
      if (k < max)
        REQUIRE(next_child(child) > 0);
    }
    REQUIRE(within(std::chrono::milliseconds{10000 * tsan_slow},
                   [&] { return runner_of_lane(1) == 0; }));
    CHECK_THROWS_WITH(rt.full({4}, 1.0f, ag::device::sim(0)).to_vector(), Contains("sim:0"));
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:0") && Contains("signal 9"));
    CHECK(rt.stats().restarts == max);
    CHECK((rt.full({4}, 1.0f, ag::device::sim(1)) + 1.0f).to_vector()
          == std::vector<float>(4, 2.0f));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}
