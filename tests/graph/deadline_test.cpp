// Deadline arithmetic saturates: milliseconds::max() is "no deadline", never a time in the past.
#include <catch2/catch.hpp>

#include <chrono>

#include "graph/deadline.hpp"

using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

TEST_CASE("deadlines saturate instead of overflowing", "[graph]") {
  const auto now = ag::steady_clock::now();
  CHECK(ag::deadline_after(ms::max(), now) == ag::steady_clock::time_point::max());
  CHECK(ag::deadline_after(ms::max() - 1ms, now) == ag::steady_clock::time_point::max());
  CHECK(ag::deadline_after(1500ms, now) == now + 1500ms);
  CHECK(ag::saturating_add(ms::max(), 5s) == ms::max());
  CHECK(ag::saturating_add(ms::max() - 1ms, 5s) == ms::max());
  CHECK(ag::saturating_add(1000ms, 5s) == 6000ms);
  CHECK(ag::no_deadline(ms::max()));
  CHECK_FALSE(ag::no_deadline(60s));
  CHECK(ag::duration_string(ms::max()) == "no deadline");
  CHECK(ag::duration_string(5000ms) == "5000 ms");
}
