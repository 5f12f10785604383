// Steps (planner::mark_step): a lane's operators of one step leave in one batch tagged with the
// step's number, whatever the drains between them; a wait sends an open step at once, untagged.
#include <catch2/catch.hpp>

#include "tests/actors/planner_rig.hpp"

using namespace ag::test;

namespace {

// n adds on lane l, each of the upload #1 with itself, results from #first on.
void adds(rig& r, uint32_t l, ag::operand_id first, int n) {
  for (int i = 0; i < n; ++i) {
    r.submit(compute(ag::op_kind::add, l, first + i, 1, 1, 4));
    r.drain();
  }
}

} // namespace

TEST_CASE("without marks every drain sends what it has", "[planner][steps]") {
  rig r;
  r.submit(upload(sim0, 1, filled(4, 1)));
  adds(r, sim0, 10, 3);
  CHECK(r.out.batches(sim0) == 3); // the upload went with the first add
  for (const auto& b : r.out.runs[sim0])
    CHECK(b.step == 0);
  CHECK(r.plan.steps() == 0);
}

TEST_CASE("a marked step goes to its lane as one batch whatever the drains between its operators",
          "[planner][steps]") {
  rig r;
  r.submit(upload(sim0, 1, filled(4, 1)));
  r.drain();
  REQUIRE(r.out.batches(sim0) == 1);
  CHECK(r.last_batch(sim0).step == 0); // before the first mark nothing waits
  r.plan.mark_step(); // step 1: nothing left of it to send
  r.drain();
  CHECK(r.out.batches(sim0) == 1);

  adds(r, sim0, 10, 5);
  CHECK(r.out.batches(sim0) == 1); // step 2 waits for its mark
  r.plan.mark_step();
  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  const auto& b = r.last_batch(sim0);
  CHECK(b.step == 2);
  CHECK(b.ops.size() == 5);
  CHECK(b.ops_before == 1);
  CHECK(r.plan.steps() == 2);
}

TEST_CASE("two steps marked before a drain still go in a batch each", "[planner][steps]") {
  rig r;
  r.submit(upload(sim0, 1, filled(4, 1)));
  r.plan.mark_step();
  for (int s = 0; s < 3; ++s) {
    for (int i = 0; i < 2; ++i)
      r.submit(compute(ag::op_kind::add, sim0, 10 + 2 * s + i, 1, 1, 4));
    r.plan.mark_step();
  }
  r.drain();
  REQUIRE(r.out.batches(sim0) == 4);
  for (uint64_t s = 1; s <= 4; ++s) {
    CAPTURE(s);
    const auto& b = r.out.runs[sim0][s - 1];
    CHECK(b.step == s);
    CHECK(b.ops.size() == (s == 1 ? 1u : 2u));
  }
}

TEST_CASE("a sync or a read sends the open step at once untagged and the next mark starts a new one",
          "[planner][steps]") {
  rig r;
  r.submit(upload(sim0, 1, filled(4, 1)));
  r.plan.mark_step();
  r.drain();
  adds(r, sim0, 10, 2);
  CHECK(r.out.batches(sim0) == 1);
  const auto w = r.sync();
  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  CHECK(r.last_batch(sim0).step == 0);
  CHECK(r.last_batch(sim0).ops.size() == 2);
  CHECK_FALSE(r.out.was_answered(w));

  adds(r, sim0, 20, 2); // the broken step goes on without waiting
  CHECK(r.out.batches(sim0) == 4);
  r.plan.mark_step(); // ends the broken step: nothing left of it to tag
  r.drain();
  CHECK(r.out.batches(sim0) == 4);

  adds(r, sim0, 30, 3); // a fresh step waits again
  CHECK(r.out.batches(sim0) == 4);
  r.plan.mark_step();
  r.drain();
  REQUIRE(r.out.batches(sim0) == 5);
  CHECK(r.last_batch(sim0).step == 3);
  CHECK(r.last_batch(sim0).ops.size() == 3);
}

TEST_CASE("a ticket wait breaks the open step too", "[planner][steps]") {
  rig r;
  r.submit(upload(sim0, 1, filled(4, 1)));
  r.plan.mark_step();
  r.drain();
  adds(r, sim0, 10, 2);
  r.plan.break_step();
  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  CHECK(r.last_batch(sim0).step == 0);
}

TEST_CASE("a step larger than half a lane's credits goes before its mark",
          "[planner][steps]") {
  auto s = setup_of();
  s.flow = std::make_shared<ag::flow_control>(std::vector<std::string>{"cpu", "sim:0", "sim:1"},
                                              ag::flow_control::limits{8, 1 << 20});
  rig r{s};
  r.submit(upload(sim0, 1, filled(4, 1)));
  r.plan.mark_step();
  r.drain();
  adds(r, sim0, 10, 4); // 4 entries: at the bound, still held
  CHECK(r.out.batches(sim0) == 1);
  adds(r, sim0, 20, 1); // 5: past it
  REQUIRE(r.out.batches(sim0) == 2);
  CHECK(r.last_batch(sim0).step == 0);
  CHECK(r.last_batch(sim0).ops.size() == 5);
}

TEST_CASE("a step spread over two lanes is one batch on each, with the same number",
          "[planner][steps]") {
  rig r;
  r.submit(upload(sim0, 1, filled(4, 1)));
  r.submit(upload(sim1, 2, filled(4, 2)));
  r.plan.mark_step();
  r.drain();
  for (int i = 0; i < 3; ++i) {
    r.submit(compute(ag::op_kind::add, sim0, 10 + i, 1, 1, 4));
    r.submit(compute(ag::op_kind::mul, sim1, 20 + i, 2, 2, 4));
    r.drain();
  }
  r.plan.mark_step();
  r.drain();
  for (uint32_t l : {sim0, sim1}) {
    CAPTURE(l);
    REQUIRE(r.out.batches(l) == 2);
    CHECK(r.last_batch(l).step == 2);
    CHECK(r.last_batch(l).ops.size() == 3);
  }
}

TEST_CASE("in process mode each step is a broadcast of its own", "[planner][steps]") {
  rig r{setup_of(64 << 10, true)};
  for (uint32_t l = 0; l < r.lanes; ++l)
    r.plan.ready(l);
  r.submit(upload(sim0, 1, filled(4, 1)));
  r.plan.mark_step();
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 1);
  for (int s = 0; s < 2; ++s) {
    for (int i = 0; i < 3; ++i)
      r.submit(compute(ag::op_kind::add, sim0, 10 + 4 * s + i, 1, 1, 4));
    r.plan.mark_step();
  }
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 3);
  for (uint64_t s = 1; s <= 3; ++s) {
    CAPTURE(s);
    REQUIRE(r.out.broadcasts[s - 1].batches.size() == 1);
    CHECK(r.out.broadcasts[s - 1].batches[0].step == s);
    CHECK(r.out.broadcasts[s - 1].batches[0].ops.size() == (s == 1 ? 1u : 3u));
  }
}
