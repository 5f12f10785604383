// The executor's flush gate (actors/flush_gate.hpp): when a flush waits for what comes right
// behind, for how long, and that it never waits twice or after a read.
#include <catch2/catch.hpp>

#include <chrono>

#include "actors/flush_gate.hpp"

using namespace std::chrono_literals;
using ag::flush_gate;

TEST_CASE("a flush waits a moment for what follows, releases alone as long as the executor "
          "lingers",
          "[planner]") {
  flush_gate gate{50us};
  CHECK(gate.hold(false) == flush_gate::gather);
  CHECK(gate.hold(true) == 50us);
  flush_gate short_linger{1us}; // never longer than the executor lingers
  CHECK(short_linger.hold(false) == 1us);
}

TEST_CASE("a flush is held once: after something came it goes out when that is handled",
          "[planner]") {
  flush_gate gate{50us};
  REQUIRE(gate.hold(true) == 50us);
  gate.held();
  CHECK(gate.hold(true) == 0ns);
  CHECK(gate.hold(false) == 0ns); // still not: it has not gone out
  gate.dispatched();
  CHECK(gate.hold(false) == flush_gate::gather);
}

TEST_CASE("once a read or a sync came, the next flush goes out at once, and only that one",
          "[planner]") {
  flush_gate gate{50us};
  gate.wait_arrived();
  CHECK(gate.hold(true) == 0ns);
  gate.dispatched();
  CHECK(gate.hold(true) == 50us);
}

TEST_CASE("without lingering (the sockets, or spin_wait 0) a flush is never held", "[planner]") {
  flush_gate gate{0ns};
  CHECK(gate.hold(true) == 0ns);
  CHECK(gate.hold(false) == 0ns);
}

TEST_CASE("a read or a sync leaves the gate awaiting an answer until an acknowledgement comes",
          "[planner]") {
  flush_gate gate{50us};
  CHECK_FALSE(gate.awaited());
  gate.wait_arrived();
  CHECK(gate.awaited());
  (void)gate.hold(false);
  gate.dispatched();
  CHECK(gate.awaited()); // a flush does not answer it
  gate.answered();
  CHECK_FALSE(gate.awaited());
}
