// The planner's restarts (actors/planner_restart.cpp): a remote lane whose child is gone gets a new
// child while restarts are left; what the dead child held is lost and says so; the lane's counts go
// on; what is submitted meanwhile waits for the new child's Ready; a restart that is not ready by
// its deadline fails again; past max_restarts the lane stays failed.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "actors/planner.hpp"
#include "ipc/completion_board.hpp"
#include "tests/actors/planner_rig.hpp"

using namespace std::chrono_literals;
using Catch::Contains;
using namespace ag::test;

namespace {

ag::planner_setup restarting_setup(uint32_t max_restarts) {
  auto s = setup_of(64 << 10, true);
  s.max_restarts = max_restarts;
  return s;
}

void all_ready(rig& r) {
  for (uint32_t l = 0; l < r.lanes; ++l)
    r.plan.ready(l);
}

// Operators of lane l in every broadcast so far.
std::vector<ag::batch> broadcast_batches(const rig& r, uint32_t l) {
  std::vector<ag::batch> v;
  for (const auto& m : r.out.broadcasts)
    for (const auto& b : m.batches)
      if (b.lane == l)
        v.push_back(b);
  return v;
}

} // namespace

TEST_CASE("a child that dies is started again, and what it held is lost in the restart",
          "[planner][restarts]") {
  rig r{restarting_setup(2)};
  all_ready(r);
  r.submit(upload(sim0, 1, {1, 2}));
  r.submit(upload(sim1, 2, {3, 4}));
  r.drain();
  REQUIRE(broadcast_batches(r, sim0).size() == 1);
  r.plan.done(sim0, 1, 8, 1);
  r.plan.done(sim1, 1, 8, 1);
  // sim:0 runs one more operator and dies before it acknowledges it.
  r.submit(compute(ag::op_kind::relu, sim0, 3, 1, 0, 2));
  r.drain();
  r.plan.lane_down(sim0, "runner of sim:0 stopped: killed by signal 9");

  REQUIRE(r.out.restarts.size() == 1);
  CHECK(r.out.restarts[0].lane == sim0);
  CHECK(r.out.restarts[0].generation == 1);
  CHECK(r.out.restarts[0].entries_before == 2);
  const auto& ln = r.plan.lane(sim0);
  CHECK(ln.failed.empty());
  CHECK_FALSE(ln.down);
  CHECK(ln.restarting);
  CHECK(ln.done == 2); // everything issued counts as run (or lost)
  CHECK(ln.sent == 2);
  CHECK(r.plan.stats().restarts == 1);
  // Its tensors are lost, and say where and how.
  for (ag::operand_id id : {1, 3}) {
    INFO("tensor #" << id);
    REQUIRE(r.plan.tensor(id) != nullptr);
    CHECK_THAT(r.plan.tensor(id)->failure,
               Contains("killed by signal 9") && Contains("lost when sim:0 was restarted"));
  }
  CHECK(r.plan.tensor(2)->failure.empty()); // sim:1's are not
  // The failure is reported once, by the next sync.
  const auto w = r.sync();
  CHECK_THAT(r.out.answer_of(w).what, Contains("killed by signal 9"));

  // An operator on a lost tensor fails with that; a new one waits for the new child.
  r.submit(compute(ag::op_kind::relu, sim0, 4, 1, 0, 2));
  r.submit(upload(sim0, 5, {5, 6}));
  r.drain();
  CHECK_THAT(r.plan.tensor(4)->failure, Contains("lost when sim:0 was restarted"));
  CHECK(broadcast_batches(r, sim0).size() == 2); // nothing more until it is ready
  CHECK(r.plan.ready(sim0)); // every lane is ready again
  REQUIRE(broadcast_batches(r, sim0).size() == 3);
  const auto b = broadcast_batches(r, sim0).back();
  CHECK(b.ops_before == 2); // after the two the old child had (the one that failed got no index)
  REQUIRE(b.ops.size() == 1);
  CHECK(b.ops[0].out.id == 5);
  CHECK_FALSE(r.plan.lane(sim0).restarting);
  r.plan.done(sim0, 3, 8, 3);
  CHECK(r.plan.lane(sim0).done == 3);
  const auto w2 = r.sync(); // the lost input's failure, reported once
  CHECK_THAT(r.out.answer_of(w2).what, Contains("lost when sim:0 was restarted"));
  const auto w3 = r.sync();
  REQUIRE(r.out.was_answered(w3));
  CHECK_FALSE(r.out.answer_of(w3).code);
}

TEST_CASE("past max_restarts a device stays failed", "[planner][restarts]") {
  rig r{restarting_setup(1)};
  all_ready(r);
  r.plan.lane_down(sim0, "killed by signal 9");
  REQUIRE(r.out.restarts.size() == 1);
  r.plan.ready(sim0);
  r.plan.lane_down(sim0, "killed by signal 9 again");
  CHECK(r.out.restarts.size() == 1);
  CHECK_THAT(r.plan.lane(sim0).failed, Contains("again"));
  CHECK(r.plan.stats().restarts == 1);
  r.submit(upload(sim0, 1, {1}));
  CHECK_THAT(r.plan.tensor(1)->failure, Contains("again"));
}

TEST_CASE("without restarts, and for a child that never was ready, nothing is started again",
          "[planner][restarts]") {
  SECTION("max_restarts 0") {
    rig r{restarting_setup(0)};
    all_ready(r);
    r.plan.lane_down(sim0, "killed by signal 9");
    CHECK(r.out.restarts.empty());
    CHECK_FALSE(r.plan.lane(sim0).failed.empty());
  }
  SECTION("a first child that dies before it is ready fails start-up") {
    rig r{restarting_setup(3)};
    const auto w = r.plan.new_wait();
    r.plan.wait_ready(w);
    r.plan.ready(cpu);
    r.plan.lane_down(sim0, "exited with code 3");
    CHECK(r.out.restarts.empty());
    CHECK_THAT(r.out.answer_of(w).what, Contains("before it was ready"));
  }
}

TEST_CASE("a restarted child that dies before it is ready is started again, until the bound",
          "[planner][restarts]") {
  rig r{restarting_setup(2)};
  const auto w = r.plan.new_wait();
  r.plan.wait_ready(w);
  all_ready(r);
  REQUIRE(r.out.was_answered(w));
  r.plan.lane_down(sim1, "killed by signal 9");
  r.plan.lane_down(sim1, "exited with code 3"); // the new child failed to start
  REQUIRE(r.out.restarts.size() == 2);
  CHECK(r.out.restarts[1].generation == 2);
  // Its deadline: a restart that is not ready by then fails the lane (and its child is killed).
  r.plan.restart_deadline(sim1, 1, 100ms); // an older restart's deadline: nothing
  CHECK(r.out.kills.empty());
  r.plan.restart_deadline(sim1, 2, 100ms);
  CHECK_THAT(r.plan.lane(sim1).failed, Contains("was not ready within 100 ms"));
  REQUIRE(r.out.kills.size() == 1);
  CHECK(r.out.kills[0] == sim1);
  r.plan.lane_down(sim1, "killed by signal 9");
  CHECK(r.out.restarts.size() == 2); // none left
}

TEST_CASE("a restarted child's reads count from when it joined, and never past what was sent",
          "[planner][restarts]") {
  rig r{restarting_setup(1)};
  all_ready(r);
  r.submit(upload(sim1, 1, {1}));
  r.drain();
  r.submit(upload(sim1, 2, {1}));
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 2);
  r.plan.lane_down(sim0, "killed by signal 9");
  CHECK(r.plan.lane(sim0).broadcasts_received == 2);
  r.plan.received(sim0, 1); // before its Ready: not counted
  CHECK(r.plan.lane(sim0).broadcasts_received == 2);
  r.plan.ready(sim0);
  r.submit(upload(sim0, 3, {1}));
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 3);
  r.plan.received(sim0, 1);
  CHECK(r.plan.lane(sim0).broadcasts_received == 3);
  r.plan.received(sim0, 5); // counted some that went out before its Ready reached the planner
  CHECK(r.plan.lane(sim0).broadcasts_received == 3);
}

TEST_CASE("the board shows a restarted lane healthy, its counts where the planner's stand",
          "[planner][restarts]") {
  ag::local_board board{3};
  auto s = restarting_setup(1);
  s.board = &board.board();
  rig r{std::move(s)};
  all_ready(r);
  r.submit(upload(sim0, 1, {1}));
  r.submit(upload(sim0, 2, {1}));
  r.drain();
  board.board().completed(sim0, 1, 1);
  r.plan.lane_down(sim0, "killed by signal 9");
  CHECK_FALSE(board.board().lane_failed(sim0));
  CHECK(board.board().ops(sim0) == 2);
  CHECK(board.board().entries(sim0) == 2);
}
