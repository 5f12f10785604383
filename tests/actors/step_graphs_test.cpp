// Steps as graphs on a runner (actors/batch_runner.hpp, actors/step_cache.hpp): a sim lane records
// a step it ran before and replays it, keeps a graph per binding (an update when what it binds
// changes: step_prepared_test.cpp), keeps no more graphs
// than its bound, and fails a call inside a replayed step naming the operator and the step. The
// results are those of a runner without graphs, bit for bit.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "tests/actors/step_lane.hpp"

using Catch::Matchers::Contains;

using ag::test::graphs_on;

using ag::test::all;
using lane = ag::test::sim_lane;

namespace {

constexpr uint64_t n = ag::test::sim_elements;

ag::step_policy graphs(std::size_t max = 64) { return graphs_on(max); }

} // namespace

TEST_CASE("a step run again is captured on its third run and replayed from then on",
          "[steps][graphs]") {
  lane l{graphs()};
  for (uint64_t s = 1; s <= 8; ++s) {
    CAPTURE(s);
    l.step(s, 2.0, 0);
    REQUIRE(l.out.failures.empty());
    CHECK(l.range(0) == all(6.0f));
    l.clear();
  }
  // The cache hands the two intermediates' blocks out last-freed first: they swap from one run
  // to the next, so the step binds one of two ways, and keeps a graph for each.
  CHECK(l.runner.graphs().instantiated == 2);
  CHECK(l.runner.graphs().updated == 0);
  CHECK(l.runner.graphs().launched == 6);
  CHECK(l.out.done_counts.back() == l.ops);
}

TEST_CASE("graphs off: every step runs operator by operator", "[steps][graphs]") {
  lane l{ag::step_policy{}};
  for (uint64_t s = 1; s <= 5; ++s)
    l.step(s, 2.0, 0);
  CHECK(l.range(0) == all(6.0f));
  CHECK(l.runner.graphs().launched == 0);
  CHECK(l.runner.graphs().instantiated == 0);
}

TEST_CASE("a step that alternates between two bindings keeps a graph for each",
          "[steps][graphs]") {
  lane l{graphs()};
  for (uint64_t s = 1; s <= 12; ++s) {
    CAPTURE(s);
    const int r = int(s % 2);
    l.step(s, 1.0, r);
    CHECK(l.range(r) == all(3.0f));
    l.clear();
  }
  CHECK(l.runner.graphs().instantiated == 2);
  CHECK(l.runner.graphs().updated == 0);
  CHECK(l.runner.graphs().launched == 10);
}

TEST_CASE("a step whose input moves while its own memory stays reads the input it is given",
          "[steps][graphs]") {
  lane l{graphs()};
  for (uint64_t s = 1; s <= 12; ++s) {
    CAPTURE(s);
    const bool first = s % 3 != 0; // #1 (1.5) twice, then #3 (4): the step's blocks stay put
    l.step(s, 1.0, 0, first ? 1 : 3);
    CHECK(l.range(0) == all(first ? 3.0f : 8.0f));
  }
  REQUIRE(l.out.failures.empty());
  CHECK(l.runner.graphs().launched == 10);
}

TEST_CASE("the cache keeps at most max graphs: two steps in turn with room for one",
          "[steps][graphs]") {
  lane l{graphs(1)};
  for (uint64_t s = 1; s <= 12; ++s) {
    CAPTURE(s);
    const bool big = s % 2 == 0;
    l.step(s, 1.0, 0, big ? 1 : 2);
    CHECK(l.range(0, big ? n : n / 2) == all(big ? 3.0f : 5.0f, big ? n : n / 2));
  }
  REQUIRE(l.out.failures.empty());
  // Each step evicts the other's graph: every run from the third on captures again.
  CHECK(l.runner.graphs().launched == 8);
  CHECK(l.runner.graphs().instantiated == 8);
}

TEST_CASE("an operator failing inside a replayed step fails naming the operator and the step",
          "[steps][graphs]") {
  lane l{graphs()};
  l.make_indices();
  for (uint64_t s = 1; s <= 4; ++s)
    l.gather_step(s, 13);
  REQUIRE(l.out.failures.empty());
  CHECK(l.runner.graphs().launched == 2);
  CHECK(l.range(0, 32) == all(1.5f, 32));
  const uint64_t failing = l.ops + 1;
  l.gather_step(5, 14);
  REQUIRE(l.out.failures.size() == 1);
  CHECK_THAT(l.out.failures[0], Contains("sim:0") && Contains("out of range")
                                  && Contains("in step 5, launched as a graph"));
  CHECK(l.out.done_counts.back() == l.ops);
  CHECK(failing == l.ops - 1);
}
