// The planner's watchdog (actors/planner_watch.cpp) with a completion board, as on the
// shared-memory path: a child behind in reading is spared while the board shows it inside an
// operator with its heartbeat going, and failed once the heartbeat stops.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/planner.hpp"
#include "ipc/completion_board.hpp"
#include "tests/actors/planner_rig.hpp"

using namespace std::chrono_literals;
using Catch::Contains;
using namespace ag::test;

namespace {

// Process mode on a board, with a watchdog that fails at the first look showing no progress.
struct watch_rig {
  ag::local_board board{3};
  rig r{with_board(board)};

  static ag::planner_setup with_board(ag::local_board& b) {
    auto s = setup_of(64 << 10, true);
    s.board = &b.board();
    s.runners_see_board = true;
    s.progress_timeout = 0ms;
    return s;
  }
};

} // namespace

TEST_CASE("the watchdog spares a child behind while the board shows it inside an operator and "
          "beating, and fails and kills it once the beat stops",
          "[planner]") {
  watch_rig w;
  auto& r = w.r;
  auto& board = w.board.board();
  r.plan.delivered(0); // the shared-memory path: the executor says what the ring holds
  r.submit(upload(sim0, 1, {1}));
  r.submit(upload(sim1, 2, {2}));
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 1);
  r.plan.delivered(1);
  r.plan.received(sim1, 1);

  board.running(sim0, 1); // sim:0 runs its first operator and has not read the broadcast
  board.beat(sim0);
  r.plan.check_progress();
  CHECK(r.plan.lane(sim0).failed.empty());
  CHECK(r.out.kills.empty());
  board.beat(sim0);
  r.plan.check_progress();
  CHECK(r.plan.lane(sim0).failed.empty());

  r.plan.check_progress(); // stopped: the mark stays, the beat does not move
  CHECK_THAT(r.plan.lane(sim0).failed, Contains("sim:0 made no progress for 0 ms")
                                         && Contains("its child is killed"));
  CHECK(r.out.kills == std::vector<uint32_t>{sim0});
  CHECK(r.plan.lane(sim1).failed.empty());
}

TEST_CASE("the watchdog fails a child behind that beats but is inside no operator", "[planner]") {
  watch_rig w;
  auto& r = w.r;
  auto& board = w.board.board();
  r.plan.delivered(0);
  r.submit(upload(sim0, 1, {1}));
  r.drain();
  r.plan.delivered(1);
  r.plan.received(sim1, 1);
  board.beat(sim0); // alive, yet it reads nothing and runs nothing
  r.plan.check_progress();
  CHECK_THAT(r.plan.lane(sim0).failed, Contains("sim:0 made no progress"));
  CHECK(r.out.kills == std::vector<uint32_t>{sim0});
}
