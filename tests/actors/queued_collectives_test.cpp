// Many collectives queued without a wait: each costs the planner O(1) amortised however many are
// queued (the store ranges they free, the readers of their parts, the spread of a failure), so
// 60 000 of them settle, or fail, well within the wait deadline in both modes. Before, every
// acknowledgement scanned every pending free: 60 000 took past a minute and sync() failed blaming
// a healthy lane, and a child killed under them left stats() and to_vector() timing out.
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

} // namespace

TEST_CASE("60 000 all_reduces queued without a wait settle within the wait deadline", "[process]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  {
    ag::runtime rt{sim_options(process, "sim:0,sim:1", 60s * tsan_slow)};
    const auto x = rt.full({4}, 1.0f, ag::device::sim(0));
    const auto y = rt.full({4}, 2.0f, ag::device::sim(1));
    std::vector<ag::tensor> last;
    for (int i = 0; i < queued; ++i)
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
    // The deadline is far below what settling the failure took before (19 s past the kill).
    ag::runtime rt{sim_options(true, "sim:0,sim:1", 10s * tsan_slow)};
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
