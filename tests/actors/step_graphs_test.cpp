// Steps as graphs on a runner (actors/batch_runner.hpp, actors/step_cache.hpp): a sim lane records
// a step it ran before and replays it, updates it when what it binds changes, keeps no more graphs
// than its bound, and fails a call inside a replayed step naming the operator and the step. The
// results are those of a runner without graphs, bit for bit.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "tests/actors/step_lane.hpp"

using Catch::Matchers::Contains;

using ag::test::graphs_on;

namespace {

constexpr uint64_t n = 1024;

struct lane : ag::test::step_lane {
  explicit lane(ag::step_policy p) : step_lane(ag::device::sim(0), p, ::n) {}
};

ag::step_policy graphs(std::size_t max = 64) { return graphs_on(max); }

std::vector<float> all(float x, uint64_t count = n) { return std::vector<float>(count, x); }

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

TEST_CASE("a step whose scalar changes updates its graph in place, with the new value",
          "[steps][graphs]") {
  lane l{graphs()};
  for (uint64_t s = 1; s <= 14; ++s) {
    CAPTURE(s);
    l.step(s, double(s), 0);
    CHECK(l.range(0) == all(3.0f * float(s)));
  }
  // Runs 3 to 10 make a graph per binding (graphs_per_step), runs 11 to 14 update the oldest.
  static_assert(ag::step_policy::graphs_per_step == 8);
  CHECK(l.runner.graphs().instantiated == 8);
  CHECK(l.runner.graphs().updated == 4);
  CHECK(l.runner.graphs().launched == 12);
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
  // A step that gathers rows of the table #1 ([n / 4, 4]) by indices #13 or #14 (int64, [8]).
  auto gather_step = [&](uint64_t s, ag::operand_id indices) {
    const ag::operand_id t = l.next_id++;
    ag::batch b;
    b.step = s;
    auto emb = ag::make_op(ag::op_kind::embedding, {t}, {1}, {indices}, 8 * 4, n / 4, 4, 8);
    emb.in_type = ag::dtype::int64;
    b.ops.push_back(emb);
    b.ops.push_back(ag::make_op(ag::op_kind::copy, {0, 0}, {t}, {}, 8 * 4, 0, 0, 0));
    b.no_hold = {t};
    l.send(b);
  };
  ag::batch idx;
  auto good = ag::make_op(ag::op_kind::fill, {13}, {}, {}, 8, 0, 0, 0, 3);
  good.type = ag::dtype::int64;
  auto bad = ag::make_op(ag::op_kind::fill, {14}, {}, {}, 8, 0, 0, 0, 100000);
  bad.type = ag::dtype::int64;
  idx.ops = {good, bad};
  l.send(idx);
  for (uint64_t s = 1; s <= 4; ++s)
    gather_step(s, 13);
  REQUIRE(l.out.failures.empty());
  CHECK(l.runner.graphs().launched == 2);
  CHECK(l.range(0, 32) == all(1.5f, 32));
  const uint64_t failing = l.ops + 1;
  gather_step(5, 14);
  REQUIRE(l.out.failures.size() == 1);
  CHECK_THAT(l.out.failures[0], Contains("sim:0") && Contains("out of range")
                                  && Contains("in step 5, launched as a graph"));
  CHECK(l.out.done_counts.back() == l.ops);
  CHECK(failing == l.ops - 1);
}
