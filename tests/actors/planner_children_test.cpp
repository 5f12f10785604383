// The planner (actors/planner.hpp) with lanes in child processes, driven as the executor drives
// it: one broadcast for every remote lane, the user's threads held while a child is behind in
// reading, and the watchdog that fails a child making no progress and spares one that reads.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "actors/planner.hpp"
#include "ipc/wire.hpp"
#include "tests/actors/planner_rig.hpp"

using namespace std::chrono_literals;
using Catch::Contains;
using namespace ag::test;

// -- process mode ---------------------------------------------------------------------------------

TEST_CASE("in process mode one broadcast carries the batches of every remote lane", "[planner]") {
  rig r{setup_of(64 << 10, true)};
  r.submit(upload(sim0, 1, {1, 2}));
  r.submit(upload(sim1, 2, {3}));
  r.submit(upload(cpu, 3, {4}));
  r.submit(compute(ag::op_kind::relu, cpu, 4, 3, 0, 1));
  r.drain();
  CHECK(r.out.batches(sim0) == 0);
  CHECK(r.out.batches(sim1) == 0);
  CHECK(r.out.batches(cpu) == 1); // the cpu lane runs in this process
  REQUIRE(r.out.broadcasts.size() == 1);
  const auto& m = r.out.broadcasts[0];
  REQUIRE(m.batches.size() == 2);
  CHECK(m.batches[0].lane == sim0);
  CHECK(m.batches[0].ops.size() == 1);
  CHECK(m.batches[0].ops[0].out.id == 1);
  CHECK(m.batches[1].lane == sim1);
  CHECK(m.batches[1].ops.size() == 1);
  CHECK(m.batches[1].ops[0].out.id == 2);
  CHECK(r.out.progress_checks == std::vector<std::chrono::milliseconds>{250ms});
  CHECK(r.plan.lane(sim0).remote);
  CHECK_FALSE(r.plan.lane(cpu).remote);

  r.plan.received(sim0, 1);
  CHECK(r.plan.lane(sim0).broadcasts_received == 1);
  CHECK(r.plan.lane(sim1).broadcasts_received == 0);
  r.plan.received(sim0, 1); // nothing new
  CHECK(r.plan.lane(sim0).broadcasts_received == 1);

  // A second drain: one more broadcast, for sim:0 only.
  r.submit(compute(ag::op_kind::relu, sim0, 5, 1, 0, 2));
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 2);
  REQUIRE(r.out.broadcasts[1].batches.size() == 1);
  CHECK(r.out.broadcasts[1].batches[0].ops_before == 1);
  CHECK(r.out.progress_checks.size() == 1); // one check scheduled at a time
}

TEST_CASE("a child behind in reading its broadcasts holds the user's threads until it reads",
          "[planner]") {
  auto s = setup_of(64 << 10, true);
  s.max_queued_bytes = 100;
  s.flow = lanes_flow();
  auto fc = s.flow;
  rig r{std::move(s)};
  r.submit(upload(sim0, 1, {1}));
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 1);
  CHECK(fc->held());
  // Every submitter waits; one with no time to wait says why. A broadcast weighs what the PUB
  // socket queues for it: its header frame and its encoded body.
  const auto queued = ag::wire::header_size + ag::wire::encoded_size(r.out.broadcasts[0]);
  CHECK(queued == 181); // 8 of them the batch's step number, 1 its values' length (none)
  CHECK(fc->acquire(cpu, 0, 0ms)
        == "waited 0 ms for room: sim:0 is 181 bytes behind in reading its broadcasts "
           "(graph_option::max_queued_bytes = 100)");

  r.plan.received(sim0, 1);
  CHECK(fc->held()); // sim:1 receives every broadcast too
  r.plan.received(sim1, 1);
  CHECK_FALSE(fc->held());
  CHECK(fc->acquire(sim1, 0, 0ms).empty());
}

TEST_CASE("the watchdog fails and kills a child that read nothing, and spares one that read",
          "[planner]") {
  auto s = setup_of(64 << 10, true);
  s.progress_timeout = 0ms;
  s.max_queued_bytes = 100;
  s.flow = lanes_flow();
  auto fc = s.flow;
  rig r{std::move(s)};
  r.submit(upload(sim0, 1, {1}));
  r.submit(upload(sim1, 2, {2}));
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 1);
  CHECK(r.out.progress_checks == std::vector<std::chrono::milliseconds>{10ms});
  CHECK(fc->held());
  r.plan.received(sim1, 1);

  r.plan.check_progress();
  CHECK(ag::wire::header_size + ag::wire::encoded_size(r.out.broadcasts[0]) == 345);
  const std::string why = "sim:0 made no progress for 0 ms (it read none of 1 broadcasts, 345 "
                          "bytes, graph_option::progress_timeout); its child is killed";
  CHECK(r.plan.lane(sim0).failed == why);
  CHECK(r.out.kills == std::vector<uint32_t>{sim0});
  CHECK(r.plan.lane(sim1).failed.empty());
  CHECK(r.plan.tensor(1)->failure == why);
  CHECK(r.plan.tensor(2)->failure.empty());
  CHECK_FALSE(fc->held()); // a failed child holds nobody back
  CHECK(r.out.progress_checks.size() == 1); // nobody left to watch

  const auto w = r.sync();
  r.plan.done(sim1, 1, 4);
  CHECK(r.out.answer_of(w).what == why);
}

TEST_CASE("the watchdog spares a child that read every broadcast the ring holds, however many "
          "wait for room behind it",
          "[planner]") {
  auto s = setup_of(64 << 10, true);
  s.progress_timeout = 0ms;
  rig r{std::move(s)};
  r.plan.delivered(0); // the shared-memory path: the executor says what the ring holds
  r.submit(upload(sim0, 1, {1}));
  r.submit(upload(sim1, 2, {2}));
  r.drain();
  r.submit(compute(ag::op_kind::relu, sim1, 3, 2, 0, 1));
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 2);
  r.plan.delivered(1); // the second waits for room: sim:0 has not read the first
  r.plan.received(sim1, 1);
  r.plan.check_progress();
  CHECK_THAT(r.plan.lane(sim0).failed, Contains("sim:0 made no progress"));
  CHECK(r.plan.lane(sim1).failed.empty()); // it read all it could
  CHECK(r.out.kills == std::vector<uint32_t>{sim0});
}
