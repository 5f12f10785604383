// Many collectives queued without a wait: each costs the planner O(1) amortised however many are
// queued (the store ranges they free, the readers of their parts, the spread of a failure). Before,
// every acknowledgement scanned every pending free: 20 000 took 16 s, 60 000 passed a minute
// (sync() failed blaming a healthy lane), and a child killed under 60 000 left stats() and
// to_vector() timing out. What is left is latency (an acknowledgement round trip or two each, see
// docs/BENCHMARKS.md), which a loaded machine stretches: the deadlines are far above what that
// costs, and ag-bench measures it against as many adds.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using namespace std::chrono_literals;
using Catch::Contains;

namespace {

// Under ThreadSanitizer every message costs tens of times more: fewer of them there.
const int queued = static_cast<int>(60000 / tsan_shrink);
// 100 000 settle in 4 to 15 s here, and in about two minutes beside a full build; the quadratic
// work took some 400 s (25 times the 16 s of 20 000).
const int settling = static_cast<int>(100000 / tsan_shrink);

} // namespace

TEST_CASE("100 000 all_reduces queued without a wait settle within the wait deadline",
          "[process]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  {
    ag::runtime rt{sim_options(process, "sim:0,sim:1", 300s * tsan_slow)};
    const auto x = rt.full({4}, 1.0f, ag::device::sim(0));
    const auto y = rt.full({4}, 2.0f, ag::device::sim(1));
    std::vector<ag::tensor> last;
    for (int i = 0; i < settling; ++i)
      last = ag::all_reduce({x, y});
    rt.sync();
    CHECK(rt.stats().store_live_bytes == 0); // every staging range given back
    for (const auto& r : last)
      CHECK(r.to_vector() == std::vector<float>(4, 3.0f));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a child killed under 60 000 queued all_reduces fails them all and the runtime answers "
          "at once",
          "[process][faults]") {
  {
    // The sync answers once the executor has planned what was queued before it and spread the
    // failure: 3 to 5 s here, and five times that on a loaded machine (a CI run went past a 10 s
    // deadline). The deadline only stops a hang: ag-bench measures what settling and failing cost
    // ("queued all_reduce, settled" and "and failed", against as many adds).
    ag::runtime rt{sim_options(true, "sim:0,sim:1", 60s * tsan_slow)};
    const pid_t child = runner_of_lane(2); // sim:1
    REQUIRE(child > 0);
    const auto x = rt.full({4}, 1.0f, ag::device::sim(0));
    const auto y = rt.full({4}, 2.0f, ag::device::sim(1));
    rt.sync();
    REQUIRE(stop_process(child));
    std::vector<ag::tensor> last;
    for (int i = 0; i < queued; ++i)
      last = ag::all_reduce({x, y});
    REQUIRE(::kill(child, SIGKILL) == 0);
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:1"));
    CHECK_NOTHROW(rt.stats());
    for (const auto& r : last)
      CHECK_THROWS_WITH(r.to_vector(), Contains("sim:1"));
    // The survivor works on.
    CHECK(rt.full({2}, 5.0f, ag::device::sim(0)).to_vector() == std::vector<float>{5.0f, 5.0f});
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a runtime destroyed with all_reduces still queued ends without waiting out the awaits "
          "of its runners",
          "[process][lifecycle]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  // A runner awaiting a lane that was told to stop would wait for this long: the end of the
  // runtime ends its awaits (the board's stopped flag) long before.
  const auto await_deadline = 120s * tsan_slow;
  const auto t0 = std::chrono::steady_clock::now();
  {
    ag::runtime rt{sim_options(process, "sim:0,sim:1", await_deadline)};
    const auto x = rt.full({4}, 1.0f, ag::device::sim(0));
    const auto y = rt.full({4}, 2.0f, ag::device::sim(1));
    for (int i = 0; i < queued / 3; ++i)
      (void)ag::all_reduce({x, y});
  }
  CHECK(std::chrono::steady_clock::now() - t0 < await_deadline / 2);
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}
