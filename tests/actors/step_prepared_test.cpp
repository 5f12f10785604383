// A step run before, run again without its operators (batch_runner::run_prepared on a sim lane):
// what they did with their operands is done again from the effects recorded the first time, the
// graphs of its binding are launched with the store ranges of this run's copies, and the results,
// the memory held and the failures are those of its operators run one by one.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/actors/step_lane.hpp"

using Catch::Matchers::Contains;

using ag::test::all;
using ag::test::graphs_on;
using lane = ag::test::sim_lane;

TEST_CASE("a step run again runs without its operators and gives their results", "[steps][graphs]") {
  lane l{graphs_on()};
  lane plain{ag::step_policy{}};
  uint64_t live = 0;
  for (uint64_t s = 1; s <= 12; ++s) {
    CAPTURE(s);
    const int r = int(s % 3) * 2; // the copies' store ranges change from run to run
    l.step(s, 1.0, r, 1, true);
    plain.step(s, 1.0, r, 1, true);
    REQUIRE(l.out.failures.empty());
    CHECK(l.range(r) == all(3.0f));
    CHECK(l.range(r + 1) == all(3.0f));
    CHECK(l.store == plain.store);
    if (s == 1)
      live = l.out.live;
    CHECK(l.out.live == live); // the intermediates went, as with the operators
    l.clear();
    plain.clear();
  }
  // Run 3 is recorded, and the two ways the intermediates' blocks alternate get a graph each
  // (runs 3 and 4); every later run is prepared.
  CHECK(l.runner.graphs().launched == 10);
  CHECK(l.runner.graphs().instantiated == 2);
  CHECK(l.runner.graphs().prepared == 8);
}

TEST_CASE("a step whose scalar changes runs its operators over what was made for them and "
          "updates its graph in place, with the new value",
          "[steps][graphs]") {
  lane l{graphs_on()};
  uint64_t live = 0;
  for (uint64_t s = 1; s <= 14; ++s) {
    CAPTURE(s);
    l.step(s, double(s), 0); // a new scalar each run: no graph fits it
    REQUIRE(l.out.failures.empty());
    CHECK(l.range(0) == all(3.0f * float(s)));
    if (s == 1)
      live = l.out.live;
    CHECK(l.out.live == live);
  }
  // Runs 3 to 10 make a graph per binding (graphs_per_step), runs 11 to 14 update the oldest.
  static_assert(ag::step_policy::graphs_per_step == 8);
  CHECK(l.runner.graphs().instantiated == 8);
  CHECK(l.runner.graphs().updated == 4);
  CHECK(l.runner.graphs().launched == 12);
  CHECK(l.runner.graphs().prepared == 0);
  // And with its scalar settled again, it is prepared from the next run on.
  for (uint64_t s = 15; s <= 18; ++s)
    l.step(s, 2.0, 0);
  CHECK(l.range(0) == all(6.0f));
  CHECK(l.runner.graphs().prepared >= 2);
}

TEST_CASE("a prepared step whose input is not there fails as its operator does", "[steps][graphs]") {
  lane l{graphs_on()};
  for (uint64_t s = 1; s <= 6; ++s)
    l.step(s, 1.0, 0);
  REQUIRE(l.runner.graphs().prepared > 0);
  const uint64_t failing = l.ops + 1;
  l.step(7, 1.0, 0, 77); // #77 was never made
  REQUIRE(l.out.failures.size() == 1);
  CHECK_THAT(l.out.failures[0], Contains("sim:0") && Contains("operand #77 is not on sim:0"));
  CHECK(l.out.done_counts.back() == l.ops);
  CHECK(failing == l.ops - 2);
}

TEST_CASE("a prepared step whose store range lies outside the store fails naming the range",
          "[steps][graphs]") {
  lane l{graphs_on()};
  for (uint64_t s = 1; s <= 6; ++s)
    l.step(s, 1.0, 0);
  REQUIRE(l.runner.graphs().prepared > 0);
  l.step(7, 1.0, ag::test::step_lane::ranges); // one past the last range
  REQUIRE(l.out.failures.size() == 1);
  CHECK_THAT(l.out.failures[0], Contains("sim:0") && Contains("lies outside the store"));
}

TEST_CASE("a prepared step whose input is another operand of the same size reads it",
          "[steps][graphs]") {
  lane l{graphs_on()};
  for (uint64_t s = 1; s <= 12; ++s) {
    CAPTURE(s);
    const bool first = s % 4 != 0;
    l.step(s, 1.0, 0, first ? 1 : 3);
    REQUIRE(l.out.failures.empty());
    CHECK(l.range(0) == all(first ? 3.0f : 8.0f));
  }
  CHECK(l.runner.graphs().prepared > 0);
}
