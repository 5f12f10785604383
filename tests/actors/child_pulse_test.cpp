// What the watchdog makes of one look at a child (actors/child_pulse.hpp): caught up, executing
// (inside an operator with its heartbeat going), or showing nothing.
#include <catch2/catch.hpp>

#include "actors/child_pulse.hpp"

using ag::child_pulse;
using sign = child_pulse::sign;

TEST_CASE("a child that has read everything there for it is caught up, whatever the board shows",
          "[planner]") {
  child_pulse p;
  CHECK(p.look(0, 0, 0, 0) == sign::caught_up);
  CHECK(p.look(5, 5, 3, 1) == sign::caught_up);
  CHECK(p.look(6, 5, 0, 1) == sign::caught_up); // read past what the ring holds: not behind
}

TEST_CASE("a child behind is executing while it is inside an operator and beats between looks, "
          "and shows nothing once the beat stops",
          "[planner]") {
  child_pulse p;
  CHECK(p.look(1, 4, 2, 1) == sign::executing);
  CHECK(p.look(1, 4, 2, 5) == sign::executing);
  CHECK(p.look(1, 5, 2, 9) == sign::executing); // more to read behind the same long operator
  CHECK(p.look(1, 5, 2, 9) == sign::none);      // stopped: the mark stays, the beat does not move
  CHECK(p.look(1, 5, 2, 9) == sign::none);
  CHECK(p.look(1, 5, 2, 10) == sign::executing); // continued
}

TEST_CASE("a child behind that beats between operators shows nothing: its reading is what is "
          "late",
          "[planner]") {
  child_pulse p;
  CHECK(p.look(1, 4, 0, 1) == sign::none);
  CHECK(p.look(1, 4, 0, 2) == sign::none);
  CHECK(p.look(1, 4, 0, 3) == sign::none);
}

TEST_CASE("the beat seen while caught up is the one the next look compares with", "[planner]") {
  child_pulse p;
  CHECK(p.look(3, 3, 1, 7) == sign::caught_up);
  CHECK(p.look(3, 4, 1, 7) == sign::none); // it fell behind and has not beaten since
  child_pulse q;
  CHECK(q.look(3, 3, 1, 7) == sign::caught_up);
  CHECK(q.look(3, 4, 1, 8) == sign::executing);
}

TEST_CASE("with no board (the sockets, a node's child) nothing but reading counts", "[planner]") {
  child_pulse p;
  CHECK(p.look(0, 1, 0, 0) == sign::none);
  CHECK(p.look(0, 1, 0, 0) == sign::none);
}
