// Stand-ins: what the planner sends in place of work computed from a failed lane's loss (NaN
// fills of each result, actors/planner_failure.cpp), and how that taint reaches every result and
// every read, through operands the user let go of and pieces read out of large tensors.
#include <catch2/catch.hpp>

#include <cmath>

#include "actors/planner.hpp"
#include "tests/actors/planner_rig.hpp"

using Catch::Contains;
using namespace ag::test;

namespace {

// #1 on sim:1 and #2 on sim:0, uploaded and acknowledged; then #3 on sim:0, moved from #1: its
// copy in waits for sim:1's stage, which sim:1 never acknowledges (no board: the planner holds it).
void moved_from_sim1(rig& r) {
  r.submit(upload(sim1, 1, {1, 2, 3, 4}));
  r.submit(upload(sim0, 2, {5, 6, 7, 8}));
  r.drain();
  for (uint32_t l : {cpu, sim0, sim1})
    r.plan.done(l, r.plan.lane(l).sent, 0);
  r.submit(move_to(sim0, 3, 1, 4));
}

} // namespace

TEST_CASE("a tainted copy out to the store on a CUDA lane stays a copy: a CUDA lane runs no kernel "
          "on the store",
          "[planner][faults]") {
  auto s = setup_of();
  s.devices[2] = ag::device::cuda(0); // the planner never touches CUDA itself
  rig r{s};
  constexpr uint32_t gpu = 2;
  auto on_gpu = [](ag::op_request req) {
    req.where = ag::device::cuda(0);
    return req;
  };
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  r.drain();
  for (uint32_t l : {cpu, sim0})
    r.plan.done(l, r.plan.lane(l).sent, 0);
  r.submit(on_gpu(move_to(gpu, 2, 1, 4)));                     // staged on sim:0, copied in
  r.submit(on_gpu(compute(ag::op_kind::add, gpu, 3, 2, 2, 4))); // from it
  r.submit(move_to(cpu, 4, 3, 4));                              // out to the store, on the gpu
  r.drain();
  REQUIRE(r.plan.lane(gpu).queue.size() == 3); // the copy in waits for sim:0's stage

  r.plan.failed(sim0, 0, "sim:0: boom");
  r.drain();
  const auto ops = r.ops_of(gpu);
  REQUIRE(ops.size() == 3);
  CHECK(ops[0].kind == ag::op_kind::fill);
  CHECK(ops[1].kind == ag::op_kind::fill);
  CHECK(std::isnan(ops[1].scalar));
  CHECK(ops[2].kind == ag::op_kind::copy);
  CHECK(ops[2].out.on_host());
  CHECK_THAT(r.plan.tensor(4)->failure, Contains("boom"));
}

TEST_CASE("a taint passes through an operand the user let go of before its writer ran",
          "[planner][faults]") {
  rig r;
  moved_from_sim1(r);
  r.submit(compute(ag::op_kind::add, sim0, 4, 3, 2, 4)); // a temporary
  r.submit(compute(ag::op_kind::relu, sim0, 5, 4, 0, 4));
  r.plan.release(4);
  r.drain();
  REQUIRE(r.plan.lane(sim0).queue.size() >= 3); // all behind the copy in
  REQUIRE(r.plan.tensor(4) == nullptr);

  r.plan.failed(sim1, 0, "sim:1: boom");
  r.drain();
  REQUIRE(r.plan.tensor(5) != nullptr);
  CHECK_THAT(r.plan.tensor(5)->failure, Contains("boom"));
  // Every one of them went out as a NaN fill.
  for (const auto& op : r.ops_of(sim0))
    if (op.out.id >= 3)
      CHECK((op.kind == ag::op_kind::fill && std::isnan(op.scalar)));
}

TEST_CASE("a piece of a tensor tainted after the piece was placed reads as the failure, at once",
          "[planner][faults]") {
  rig r;
  moved_from_sim1(r);
  r.drain();
  const auto w = r.plan.new_wait();
  r.plan.fetch_piece(w, 3, 1, 2); // elements [1, 3), behind the copy in
  r.drain();
  REQUIRE_FALSE(r.out.was_answered(w));

  r.plan.failed(sim1, 0, "sim:1: boom");
  r.drain();
  REQUIRE(r.out.was_answered(w));
  CHECK(r.out.answer_of(w).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(w).what, Contains("boom"));
  // Its staging range comes back once sim:0 ran what was sent (the piece's stand-in among it).
  r.plan.done(sim0, r.plan.lane(sim0).sent, 0);
  CHECK(r.plan.store().live_bytes() == 0);
}

TEST_CASE("a tainted reduction, softmax or batched matmul on a device lane stands in as a plain "
          "fill of its whole result",
          "[planner][faults]") {
  rig r;
  moved_from_sim1(r); // #3 on sim:0, waiting for sim:1
  auto reduce = compute(ag::op_kind::reduce_sum, sim0, 4, 3, 0, 2); // [2, 2, 1] -> [2, 1]
  reduce.m = 2;
  reduce.k = 2;
  reduce.n = 1;
  r.submit(reduce);
  auto batched = compute(ag::op_kind::matmul, sim0, 5, 3, 3, 8); // [2] batches of [2,1]x[1,2]
  batched.m = 2;
  batched.k = 1;
  batched.n = 2;
  batched.layout = {{2, 2, 2, 1}, {2, 1, 0, 1, 2, 0, 1, 1, 0, 0, 0, 0}, 0, 0, 0};
  r.submit(batched);
  r.drain();
  r.plan.failed(sim1, 0, "sim:1: boom");
  r.drain();
  for (const auto& op : r.ops_of(sim0)) {
    if (op.out.id != 4 && op.out.id != 5)
      continue;
    INFO(ag::describe(op));
    CHECK(op.kind == ag::op_kind::fill);
    CHECK(op.m == 0); // not a piece: the whole result
    CHECK(op.n == 0);
    CHECK(op.layout.empty());
    CHECK(op.count == (op.out.id == 4 ? 2u : 8u));
  }
  CHECK_THAT(r.plan.tensor(5)->failure, Contains("boom"));
}

TEST_CASE("a broadcast on the cpu lane that waits for store room keeps its layout", "[planner]") {
  rig r{setup_of(1024)}; // four ranges of 256 bytes
  r.submit(upload(cpu, 1, filled(64, 1.0f)));
  r.submit(upload(cpu, 3, filled(1, 5.0f)));
  r.submit(compute(ag::op_kind::relu, cpu, 2, 1, 0, 64)); // not acknowledged yet
  r.submit(upload(cpu, 6, filled(64, 2.0f)));             // the store is full
  r.drain();
  r.plan.release(2); // its range is freed once the cpu lane acknowledges the relu
  auto add = compute(ag::op_kind::add, cpu, 4, 1, 3, 64); // [64] + [1]: needs a range
  add.layout = {{64}, {1, 0, 0}, 0, 0, 0};
  r.submit(add);
  r.drain();
  CHECK(r.plan.tensor(4) == nullptr); // held until the range is free
  r.plan.done(cpu, r.plan.lane(cpu).sent, 0);
  r.drain();
  REQUIRE(r.plan.tensor(4) != nullptr);
  CHECK(r.plan.tensor(4)->failure.empty());
  const auto ops = r.ops_of(cpu);
  REQUIRE_FALSE(ops.empty());
  const auto& placed = ops.back();
  CHECK(placed.kind == ag::op_kind::add);
  CHECK(placed.layout.shape == std::vector<int64_t>{64});
  CHECK(placed.layout.strides == std::vector<int64_t>{1, 0, 0});
}
