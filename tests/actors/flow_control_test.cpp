// flow_control on its own: credits per lane, upload bytes, holds, deadlines and closing, with real
// threads and no actor system.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "actors/flow_control.hpp"

using namespace std::chrono_literals;
using Catch::Contains;

namespace {

ag::flow_control make(uint64_t ops, uint64_t bytes) {
  return ag::flow_control{{"cpu", "sim:0", "sim:1"}, {ops, bytes}};
}

// True once `n` acquires have had to wait (within 5 s), and `f` is still waiting.
template <class T>
bool blocked(ag::flow_control& fc, uint64_t n, std::future<T>& f) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (fc.stats().blocked < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  return fc.stats().blocked >= n && f.wait_for(10ms) == std::future_status::timeout;
}

} // namespace

TEST_CASE("a full lane blocks its submitters until a credit comes back, and no other lane's",
          "[flow]") {
  auto fc = make(2, 1 << 20);
  CHECK(fc.acquire(1, 0, 5000ms).empty());
  CHECK(fc.acquire(1, 0, 5000ms).empty());
  auto third = std::async(std::launch::async, [&] { return fc.acquire(1, 0, 5000ms); });
  REQUIRE(blocked(fc, 1, third));
  CHECK(fc.acquire(2, 0, 5000ms).empty()); // sim:1 has room
  CHECK(fc.acquire(0, 0, 5000ms).empty());
  fc.release(1, 1);
  REQUIRE(third.wait_for(5s) == std::future_status::ready);
  CHECK(third.get().empty());
  const auto s = fc.stats();
  CHECK(s.ops == std::vector<uint64_t>{1, 2, 1});
  CHECK(s.blocked == 1);
}

TEST_CASE("upload bytes are bounded, and one upload larger than the bound passes alone",
          "[flow]") {
  auto fc = make(100, 1000);
  CHECK(fc.acquire(1, 600, 5000ms).empty());
  auto second = std::async(std::launch::async, [&] { return fc.acquire(2, 600, 5000ms); });
  REQUIRE(blocked(fc, 1, second));
  fc.release_bytes(600);
  REQUIRE(second.wait_for(5s) == std::future_status::ready);
  CHECK(second.get().empty());
  fc.release_bytes(600);
  CHECK(fc.acquire(1, 5000, 5000ms).empty()); // alone: let through
  CHECK(fc.stats().bytes == 5000);
  CHECK_THAT(fc.acquire(1, 1, 50ms), Contains("max_in_flight_bytes"));
}

TEST_CASE("a held flow blocks every lane until it resumes", "[flow]") {
  auto fc = make(100, 1000);
  fc.hold("sim:0 is 300000 bytes behind in reading its broadcasts");
  CHECK(fc.held());
  auto a = std::async(std::launch::async, [&] { return fc.acquire(0, 0, 5000ms); });
  auto b = std::async(std::launch::async, [&] { return fc.acquire(2, 0, 5000ms); });
  REQUIRE(blocked(fc, 2, a));
  REQUIRE(blocked(fc, 2, b));
  fc.resume();
  REQUIRE(a.wait_for(5s) == std::future_status::ready);
  REQUIRE(b.wait_for(5s) == std::future_status::ready);
  CHECK(a.get().empty());
  CHECK(b.get().empty());
}

TEST_CASE("a wait for room ends at its deadline naming the full lane and the option", "[flow]") {
  auto fc = make(1, 1000);
  REQUIRE(fc.acquire(2, 0, 5000ms).empty());
  const auto why = fc.acquire(2, 0, 100ms);
  CHECK_THAT(why, Contains("waited 100 ms") && Contains("sim:1 has 1 operators unacknowledged")
                    && Contains("max_in_flight_ops"));
  CHECK(fc.stats().ops[2] == 1); // the failed wait took nothing
  fc.hold("sim:0 is behind");
  CHECK_THAT(fc.acquire(0, 0, 50ms), Contains("sim:0 is behind"));
}

TEST_CASE("milliseconds::max() waits without a deadline, and closing wakes every waiter",
          "[flow]") {
  auto fc = make(1, 1000);
  REQUIRE(fc.acquire(1, 0, std::chrono::milliseconds::max()).empty());
  auto forever = std::async(std::launch::async,
                            [&] { return fc.acquire(1, 0, std::chrono::milliseconds::max()); });
  REQUIRE(blocked(fc, 1, forever)); // not failed at once, as an overflowing deadline would
  fc.close("the runtime was destroyed");
  REQUIRE(forever.wait_for(5s) == std::future_status::ready);
  CHECK(forever.get() == "the runtime was destroyed");
  CHECK(fc.acquire(2, 0, 5000ms) == "the runtime was destroyed"); // and later ones
}

TEST_CASE("flow_control refuses a zero bound naming the option", "[flow]") {
  CHECK_THROWS_WITH(make(0, 1), Contains("max_in_flight_ops"));
  CHECK_THROWS_WITH(make(1, 0), Contains("max_in_flight_bytes"));
  auto fc = make(1, 1);
  CHECK_THAT(fc.acquire(3, 0, 10ms), Contains("lane 3 does not exist"));
}
