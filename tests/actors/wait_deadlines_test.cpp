// Tests of wait_deadlines (actors/wait_deadlines.hpp): one timer for every open wait's deadline,
// armed for the earliest; answered waits are forgotten at once and never fire.
#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

#include "actors/wait_deadlines.hpp"

using ag::wait_deadlines;
using namespace std::chrono_literals;

namespace {
const auto t0 = std::chrono::steady_clock::time_point{} + 1000s;
}

TEST_CASE("the timer is armed once for waits whose deadlines come in order", "[deadlines]") {
  wait_deadlines d;
  REQUIRE(d.add(1, t0 + 60s));
  d.armed(t0 + 60s);
  for (uint64_t w = 2; w <= 1000; ++w)
    CHECK_FALSE(d.add(w, t0 + 60s + std::chrono::milliseconds(w))); // later: no new timer
  CHECK(d.size() == 1000);
  for (uint64_t w = 1; w <= 999; ++w)
    d.forget(w); // answered
  CHECK(d.size() == 1);
  CHECK(d.fired(t0 + 60s).empty()); // the armed one was answered
  const auto next = d.rearm();
  REQUIRE(next);
  CHECK(*next == t0 + 60s + 1000ms);
  d.armed(*next);
  CHECK(d.fired(*next) == std::vector<uint64_t>{1000});
  CHECK_FALSE(d.rearm());
  CHECK(d.size() == 0);
}

TEST_CASE("an earlier deadline arms the timer again, and what is due fires in order",
          "[deadlines]") {
  wait_deadlines d;
  REQUIRE(d.add(7, t0 + 60s));
  d.armed(t0 + 60s);
  REQUIRE(d.add(8, t0 + 5s)); // earlier than the armed timer
  d.armed(t0 + 5s);
  CHECK_FALSE(d.add(9, t0 + 10s));
  CHECK(d.fired(t0 + 4s).empty());
  CHECK(d.fired(t0 + 10s) == std::vector<uint64_t>{8, 9});
  // The timer for 60 s is still armed: nothing to arm.
  CHECK_FALSE(d.rearm());
  CHECK(d.fired(t0 + 61s) == std::vector<uint64_t>{7});
  CHECK_FALSE(d.rearm());
}

TEST_CASE("a wait added again keeps only its new deadline", "[deadlines]") {
  wait_deadlines d;
  d.add(3, t0 + 1s);
  d.armed(t0 + 1s);
  d.add(3, t0 + 30s);
  CHECK(d.size() == 1);
  CHECK(d.fired(t0 + 2s).empty());
  const auto next = d.rearm();
  REQUIRE(next);
  CHECK(*next == t0 + 30s);
}
