// The planner (actors/planner.hpp) driven directly, as the executor drives it: requests and
// acknowledgements in, and what it asks of its outbox (batches, broadcasts, kills, answers,
// deadlines) checked against a real store buffer. No actors, no runners, no clocks waited on.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "actors/flow_control.hpp"
#include "actors/planner.hpp"
#include "ipc/completion_board.hpp"
#include "tests/actors/planner_rig.hpp"

using namespace std::chrono_literals;
using Catch::Contains;
using Catch::StartsWith;
using namespace ag::test;

// -- placement ------------------------------------------------------------------------------------

TEST_CASE("an upload to the cpu lane is copied into the store and read at its offset at once",
          "[planner]") {
  rig r;
  r.submit(upload(cpu, 1, {1, 2, 3, 4}));
  CHECK(r.out.flush_requests == 1);
  r.drain();
  CHECK(r.out.runs.empty()); // nothing for a runner to do
  const auto* t = r.plan.tensor(1);
  REQUIRE(t != nullptr);
  CHECK(t->lane == cpu);
  CHECK(t->offset == 0);
  CHECK(t->bytes == 16);
  CHECK(t->writer.index == 0);
  CHECK(r.plan.store().live_bytes() == ag::store_allocator::alignment);
  CHECK(r.floats_at(0, 4) == std::vector<float>{1, 2, 3, 4});

  const auto w = r.fetch(1);
  const auto& a = r.out.answer_of(w);
  CHECK_FALSE(a.code);
  CHECK(a.offset == 0);
  CHECK(r.out.expiring.count(w) == 0); // answered at once: no deadline
}

TEST_CASE("an upload to a device lane is a copy from a store range, freed once acknowledged",
          "[planner]") {
  rig r;
  r.submit(upload(cpu, 1, {9}));
  r.submit(upload(sim0, 2, {5, 6, 7}));
  r.drain();
  REQUIRE(r.out.batches(sim0) == 1);
  CHECK(r.out.batches(cpu) == 0);
  const auto& b = r.last_batch(sim0);
  CHECK(b.lane == sim0);
  CHECK(b.ops_before == 0);
  CHECK(b.no_hold.empty());
  REQUIRE(b.ops.size() == 1);
  const auto& op = b.ops[0];
  CHECK(fields(op) == copy_fields({2, no_offset}, {0, 256}, 3));
  CHECK(r.floats_at(op.a.offset, 3) == std::vector<float>{5, 6, 7});
  CHECK(r.plan.tensor(2)->lane == sim0);
  CHECK(r.plan.tensor(2)->offset == no_offset);
  CHECK(r.plan.pending_frees() == 1);
  CHECK(r.plan.store().live_bytes() == 512);

  // A device tensor is not read through fetch.
  const auto wrong = r.fetch(2);
  CHECK(r.out.answer_of(wrong).code == ag::errc::bad_request);
  CHECK_THAT(r.out.answer_of(wrong).what, Contains("operand #2 is not a cpu tensor"));

  r.plan.done(sim0, 1, 12);
  CHECK(r.plan.pending_frees() == 0);
  CHECK(r.plan.store().live_bytes() == 256); // the cpu tensor's range only
  CHECK(r.plan.stats().device_live == 12);
  CHECK(r.plan.stats().batches == 1);
  CHECK(r.plan.stats().operators == 1);
}

TEST_CASE("a compute operator runs on its device lane, naming its operands by id", "[planner]") {
  rig r;
  r.submit(upload(sim0, 1, {1, 2}));
  r.submit(upload(sim0, 2, {3, 4}));
  r.submit(compute(ag::op_kind::add, sim0, 3, 1, 2, 2));
  r.drain();
  REQUIRE(r.out.batches(sim0) == 1); // one mailbox drain, one batch
  const auto& b = r.last_batch(sim0);
  REQUIRE(b.ops.size() == 3);
  CHECK(b.ops[0].kind == ag::op_kind::copy);
  CHECK(b.ops[1].kind == ag::op_kind::copy);
  const auto& add = b.ops[2];
  CHECK(add.kind == ag::op_kind::add);
  CHECK(add.out.id == 3);
  CHECK(add.out.offset == no_offset);
  CHECK(add.a.id == 1);
  CHECK(add.a.offset == no_offset);
  CHECK(add.b.id == 2);
  CHECK(add.b.offset == no_offset);
  CHECK(add.count == 2);
  const auto* t = r.plan.tensor(3);
  REQUIRE(t != nullptr);
  CHECK(t->lane == sim0);
  CHECK(t->writer.lane == sim0);
  CHECK(t->writer.index == 3);
  CHECK(r.plan.store().live_bytes() == 512); // the two stagings; the result is device memory
  CHECK(r.plan.lane(sim1).issued == 0);
}

TEST_CASE("a read of a cpu tensor is answered only once the lane that writes it acknowledged",
          "[planner]") {
  rig r;
  r.submit(upload(cpu, 1, {-1, 2, -3}));
  r.submit(compute(ag::op_kind::relu, cpu, 2, 1, 0, 3));
  r.drain();
  REQUIRE(r.out.batches(cpu) == 1);
  const auto& op = r.last_batch(cpu).ops.at(0);
  CHECK(op.kind == ag::op_kind::relu);
  CHECK(op.out.id == 2);
  CHECK(op.out.offset == 256);
  CHECK(op.a.id == 1);
  CHECK(op.a.offset == 0);
  CHECK(r.plan.tensor(2)->writer.lane == cpu);
  CHECK(r.plan.tensor(2)->writer.index == 1);

  const auto w = r.fetch(2);
  CHECK_FALSE(r.out.was_answered(w));
  CHECK(r.out.expiring.at(w) == 500ms);
  r.plan.done(cpu, 1, 0);
  const auto& a = r.out.answer_of(w);
  CHECK_FALSE(a.code);
  CHECK(a.offset == 256);
}

TEST_CASE("a piece of a device tensor is copied to a staging range the reader gives back",
          "[planner]") {
  rig r;
  r.submit(upload(sim0, 1, filled(100, 1.0f)));
  r.drain();
  r.plan.done(sim0, 1, 400);
  REQUIRE(r.plan.store().live_bytes() == 0);
  const auto w = r.plan.new_wait();
  r.plan.fetch_piece(w, 1, 40, 80);
  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  const auto& op = r.last_batch(sim0).ops.at(0);
  // bytes [40, 120) of the 400-byte operand #1, into the staging range at 0
  CHECK(fields(op) == copy_fields({0, 0}, {1, no_offset}, 80, 40, 400));
  CHECK(op.type == ag::dtype::uint8);
  CHECK_FALSE(r.out.was_answered(w));
  r.plan.done(sim0, 2, 400);
  CHECK(r.out.answer_of(w).offset == 0);
  CHECK(r.plan.store().live_bytes() == 256);
  r.plan.unstage(0, 80);
  CHECK(r.plan.store().live_bytes() == 0);
}

TEST_CASE("an upload larger than half the store goes to its device in pieces as room frees",
          "[planner]") {
  rig r{setup_of(768)}; // three ranges of 256 bytes; pieces of 192 bytes (48 floats)
  std::vector<float> data(120);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(i);
  r.submit(upload(sim0, 1, data));
  r.drain();
  REQUIRE(r.out.batches(sim0) == 1);
  {
    const auto& ops = r.last_batch(sim0).ops;
    REQUIRE(ops.size() == 3); // 48 + 48 + 24: all three fit
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(ops[i].kind == ag::op_kind::copy);
      CHECK(ops[i].out.id == 1);
      CHECK(ops[i].m == 48 * i);
      CHECK(ops[i].n == 120);
      CHECK(ops[i].count == (i < 2 ? 48 : 24));
      CHECK(r.floats_at(ops[i].a.offset, 1).at(0) == static_cast<float>(48 * i));
    }
  }
  CHECK(r.plan.held() == 0);

  // The next one waits for room: its first piece needs a range of the full store.
  r.submit(upload(sim1, 2, data));
  CHECK(r.plan.held() == 1);
  r.drain();
  CHECK(r.out.batches(sim1) == 0);
  r.plan.done(sim0, 3, 480);
  CHECK(r.plan.held() == 0);
  r.drain();
  REQUIRE(r.out.batches(sim1) == 1);
  CHECK(r.last_batch(sim1).ops.size() == 3);
  CHECK(r.plan.tensor(2)->failure.empty());
}

// -- moves between lanes --------------------------------------------------------------------------

// #1 = {1, 2, 3, 4} uploaded to sim:0, then moved to lane `to` as #2: the batch of sim:0 that
// writes the move's store range.
const ag::batch& moved_from_sim0(rig& r, uint32_t to) {
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  r.drain();
  r.submit(move_to(to, 2, 1, 4));
  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  return r.last_batch(sim0);
}

TEST_CASE("a move between device lanes goes through a store range the destination reads once the "
          "source acknowledged",
          "[planner]") {
  rig r;
  const auto& out = moved_from_sim0(r, sim1);
  CHECK(r.out.batches(sim1) == 0); // held back: the source has not written the range
  CHECK(out.ops_before == 1);
  REQUIRE(out.ops.size() == 1);
  CHECK(fields(out.ops[0]) == copy_fields({0, 256}, {1, no_offset}, 4));
  CHECK(r.plan.tensor(2)->lane == sim1);
  CHECK(r.plan.pending_frees() == 2);
  CHECK(r.plan.store().live_bytes() == 512);

  r.plan.done(sim0, 1, 16); // the upload's batch: its staging is free, the move's is not
  CHECK(r.out.batches(sim1) == 0);
  CHECK(r.plan.pending_frees() == 1);
  CHECK(r.plan.store().live_bytes() == 256);

  r.plan.done(sim0, 2, 16);
  REQUIRE(r.out.batches(sim1) == 1);
  const auto& in = r.last_batch(sim1);
  CHECK(in.ops_before == 0);
  REQUIRE(in.ops.size() == 1);
  CHECK(in.ops[0].kind == ag::op_kind::copy);
  CHECK(in.ops[0].out.id == 2);
  CHECK(in.ops[0].out.offset == no_offset);
  CHECK(in.ops[0].a.id == 0);
  CHECK(in.ops[0].a.offset == 256);
  CHECK(in.ops[0].count == 4);
  // The destination still reads the range.
  CHECK(r.plan.pending_frees() == 1);
  CHECK(r.plan.store().live_bytes() == 256);

  r.plan.done(sim1, 1, 16);
  CHECK(r.plan.pending_frees() == 0);
  CHECK(r.plan.store().live_bytes() == 0);
  CHECK(r.plan.stats().device_live == 32);
}

TEST_CASE("a move from a device to the cpu lane is a store range read once the device "
          "acknowledged, and a move onward waits for it",
          "[planner]") {
  rig r;
  const auto& out = moved_from_sim0(r, cpu).ops.at(0);
  CHECK(fields(out) == copy_fields({2, 256}, {1, no_offset}, 4)); // into the cpu tensor itself
  const auto* t = r.plan.tensor(2);
  REQUIRE(t != nullptr);
  CHECK(t->lane == cpu);
  CHECK(t->offset == 256);
  CHECK(t->writer.lane == sim0);
  CHECK(t->writer.index == 2);
  CHECK(r.plan.pending_frees() == 1); // the upload's staging; the cpu tensor stays

  const auto w = r.fetch(2);
  r.submit(move_to(sim1, 3, 2, 4)); // cpu -> device, from a range sim:0 has yet to write
  r.drain();
  CHECK(r.out.batches(sim1) == 0);
  r.plan.done(sim0, 1, 16);
  CHECK_FALSE(r.out.was_answered(w));
  CHECK(r.out.batches(sim1) == 0);

  r.plan.done(sim0, 2, 16);
  CHECK(r.out.answer_of(w).offset == 256);
  REQUIRE(r.out.batches(sim1) == 1);
  const auto& in = r.last_batch(sim1).ops.at(0);
  CHECK(in.kind == ag::op_kind::copy);
  CHECK(in.out.id == 3);
  CHECK(in.out.offset == no_offset);
  CHECK(in.a.id == 2);
  CHECK(in.a.offset == 256);
  CHECK(r.plan.pending_frees() == 0);
  CHECK(r.plan.store().live_bytes() == 256);
}

TEST_CASE("a move of an uploaded cpu tensor to a device waits for nothing", "[planner]") {
  rig r;
  r.submit(upload(cpu, 1, {7, 8}));
  r.submit(move_to(sim1, 2, 1, 2));
  r.drain();
  REQUIRE(r.out.batches(sim1) == 1);
  const auto& op = r.last_batch(sim1).ops.at(0);
  CHECK(fields(op) == copy_fields({2, no_offset}, {1, 0}, 2));
  CHECK(r.plan.pending_frees() == 0); // the range is the cpu tensor's own
  CHECK(r.plan.lane(sim1).queue.empty());
}

// -- failures -------------------------------------------------------------------------------------

TEST_CASE("a failed lane taints what it holds and what other lanes wait to receive from it, and "
          "nothing else",
          "[planner]") {
  rig r;
  r.submit(upload(sim0, 1, {1, 2}));                       // sim:0 #1
  r.submit(upload(sim1, 2, {3, 4}));                       // sim:1 #1
  r.submit(compute(ag::op_kind::relu, sim1, 3, 2, 0, 2));  // sim:1 #2
  r.drain();
  r.plan.done(sim0, 1, 8);
  r.plan.done(sim1, 2, 16);
  r.submit(compute(ag::op_kind::relu, sim0, 4, 1, 0, 2));  // sim:0 #2
  r.submit(compute(ag::op_kind::add, sim1, 6, 2, 3, 2));   // sim:1 #3
  r.submit(move_to(sim1, 5, 4, 2));                        // sim:0 #3 out, sim:1 #4 in
  r.submit(move_to(cpu, 8, 1, 2));                         // sim:0 #4
  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  REQUIRE(r.out.batches(sim1) == 2);
  CHECK(r.last_batch(sim1).ops.size() == 1); // the add; the copy in waits for sim:0
  const auto w8 = r.fetch(8);
  CHECK_FALSE(r.out.was_answered(w8));

  r.plan.failed(sim0, 2, "relu: bad launch");
  const std::string why = "sim:0: relu: bad launch";
  CHECK(r.plan.lane(sim0).failed == why);
  CHECK(r.out.kills.empty()); // a lane of this process has no child
  for (ag::operand_id id : {1, 4, 5, 8}) {
    INFO("operand #" << id);
    CHECK(r.plan.tensor(id)->failure == why);
  }
  for (ag::operand_id id : {2, 3, 6}) {
    INFO("operand #" << id);
    CHECK(r.plan.tensor(id)->failure.empty());
  }
  CHECK(r.out.answer_of(w8).code == ag::errc::device_failed);
  CHECK(r.out.answer_of(w8).what == why);

  // sim:1 still runs its copy in, as a NaN fill, so that its operands stay whole.
  REQUIRE(r.out.batches(sim1) == 3);
  const auto& stand_in = r.last_batch(sim1);
  CHECK(stand_in.ops_before == 3);
  REQUIRE(stand_in.ops.size() == 1);
  CHECK(stand_in.ops[0].kind == ag::op_kind::fill);
  CHECK(std::isnan(stand_in.ops[0].scalar));
  CHECK(stand_in.ops[0].out.id == 5);
  CHECK(stand_in.ops[0].a.id == 0);
  CHECK(stand_in.ops[0].count == 2);
  CHECK(r.out.batches(sim0) == 2); // nothing more for the failed lane
  CHECK(r.plan.pending_frees() == 1); // the move's range: sim:1 has not run its fill yet

  // An independent tensor of sim:1 is still read.
  r.submit(move_to(cpu, 7, 6, 2));
  r.drain();
  REQUIRE(r.out.batches(sim1) == 4);
  const uint64_t at = r.last_batch(sim1).ops.at(0).out.offset;
  r.plan.done(sim1, 3, 24);
  r.plan.done(sim1, 4, 24);
  CHECK(r.plan.pending_frees() == 0);
  r.plan.done(sim1, 5, 24);
  const auto w7 = r.fetch(7);
  CHECK_FALSE(r.out.answer_of(w7).code);
  CHECK(r.out.answer_of(w7).offset == at);

  // The failure is reported by the next sync, once.
  const auto s1 = r.sync();
  CHECK(r.out.answer_of(s1).code == ag::errc::device_failed);
  CHECK(r.out.answer_of(s1).what == why);
  const auto s2 = r.sync();
  CHECK_FALSE(r.out.answer_of(s2).code);

  // A later operator on a tainted input is not run; its result says why.
  r.submit(compute(ag::op_kind::relu, sim1, 9, 5, 0, 2));
  r.drain();
  CHECK(r.out.batches(sim1) == 4);
  CHECK(r.plan.tensor(9)->failure == "relu -> #9 on sim:1: input #5 failed: " + why);
}

// fail_lane() taints the operands of the failed lane, through stand_in_for() the results of the
// operators that waited for it, and what other lanes queued behind those stand-ins (here relu(#3)
// and its move to the cpu): they run on NaN data, and a read of #5 must not pass as a success.
TEST_CASE("what was queued behind a stand-in for a failed lane's operand fails with it",
          "[planner]") {
  rig r;
  r.submit(upload(sim0, 1, {1, 2}));                      // sim:0 #1
  r.drain();
  r.plan.done(sim0, 1, 8);
  r.submit(compute(ag::op_kind::relu, sim0, 2, 1, 0, 2)); // sim:0 #2
  r.submit(move_to(sim1, 3, 2, 2));                       // sim:0 #3 out, sim:1 #1 in
  r.submit(compute(ag::op_kind::relu, sim1, 4, 3, 0, 2)); // sim:1 #2, reads #3
  r.submit(move_to(cpu, 5, 4, 2));                        // sim:1 #3, reads #4
  r.drain();
  CHECK(r.out.batches(sim1) == 0);
  r.plan.failed(sim0, 2, "relu: bad launch");
  const std::string why = "sim:0: relu: bad launch";
  CHECK(r.plan.tensor(3)->failure == why);
  REQUIRE(r.out.batches(sim1) == 1);
  REQUIRE(r.last_batch(sim1).ops.size() == 3);
  CHECK(r.last_batch(sim1).ops[0].kind == ag::op_kind::fill);
  r.plan.done(sim1, 3, 16);
  // #4 and #5 were computed from #3's NaN stand-in: they are no more readable than #3.
  CHECK_THAT(r.plan.tensor(4)->failure, Contains(why));
  CHECK_THAT(r.plan.tensor(5)->failure, Contains(why));
  const auto f = r.fetch(5);
  CHECK(r.out.answer_of(f).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(f).what, Contains(why));
}

TEST_CASE("a remote lane's failure kills its child, whose store ranges stay held until it is down",
          "[planner]") {
  SECTION("a remote lane") {
    rig r{setup_of(64 << 10, true)};
    r.submit(upload(sim0, 1, {1}));
    r.drain();
    CHECK(r.plan.pending_frees() == 1);
    r.plan.failed(sim0, 1, "sim:0: out of memory");
    CHECK(r.out.kills == std::vector<uint32_t>{sim0});
    CHECK(r.plan.lane(sim0).failed == "sim:0: out of memory"); // not named twice
    CHECK(r.plan.pending_frees() == 1); // the child may still be reading it
    r.plan.failed(sim0, 1, "again");
    CHECK(r.out.kills.size() == 1);
    r.plan.lane_down(sim0, "runner of sim:0 stopped: killed");
    CHECK(r.plan.pending_frees() == 0);
    CHECK(r.plan.store().live_bytes() == 0);

    // A child that is gone already is not killed.
    r.plan.lane_down(sim1, "runner of sim:1 stopped: exited");
    CHECK(r.plan.lane(sim1).failed == "runner of sim:1 stopped: exited");
    CHECK(r.out.kills == std::vector<uint32_t>{sim0});
  }
  SECTION("a local lane") {
    rig r;
    r.submit(upload(sim0, 1, {1}));
    r.drain();
    r.plan.failed(sim0, 1, "out of memory");
    CHECK(r.out.kills.empty());
    CHECK(r.plan.lane(sim0).failed == "sim:0: out of memory");
    CHECK(r.plan.pending_frees() == 0); // its runner runs nothing more
  }
}

// -- store space ----------------------------------------------------------------------------------

TEST_CASE("an upload that does not fit waits for the acknowledgement that frees room, and what "
          "comes behind it waits too",
          "[planner]") {
  rig r{setup_of(1280)}; // five ranges of 256 bytes
  r.submit(upload(cpu, 1, filled(64, 1.0f)));
  for (ag::operand_id id = 2; id <= 5; ++id)
    r.submit(upload(sim0, id, filled(64, static_cast<float>(id))));
  r.drain();
  REQUIRE(r.out.batches(sim0) == 1);
  REQUIRE(r.last_batch(sim0).ops.size() == 4);
  CHECK(r.plan.store().live_bytes() == 1280);

  r.submit(upload(sim0, 6, filled(64, 6.0f)));
  CHECK(r.plan.held() == 1);
  const uint64_t store_wait = r.out.last_expiring;
  CHECK(r.out.expiring.at(store_wait) == 500ms);
  const auto s = r.sync();
  const auto f = r.fetch(1); // readable now, but behind the held upload
  CHECK(r.plan.held() == 3);
  r.drain();
  CHECK(r.out.batches(sim0) == 1);
  CHECK(r.out.answers.empty());
  CHECK(r.plan.tensor(6) == nullptr);

  r.plan.done(sim0, 4, 1024);
  CHECK(r.plan.held() == 0);
  CHECK(r.out.answered == std::vector<uint64_t>{f});
  CHECK(r.out.answer_of(f).offset == 0);
  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  const auto& b = r.last_batch(sim0);
  CHECK(b.ops_before == 4);
  REQUIRE(b.ops.size() == 1);
  CHECK(b.ops[0].out.id == 6);
  CHECK(b.ops[0].a.offset == 256);
  CHECK(r.floats_at(256, 64) == filled(64, 6.0f));
  CHECK(r.plan.tensor(6)->failure.empty());

  // The sync came after the upload: it waits for it to run.
  CHECK_FALSE(r.out.was_answered(s));
  r.plan.done(sim0, 5, 1280);
  CHECK(r.out.answered == std::vector<uint64_t>{f, s});
  CHECK_FALSE(r.out.answer_of(s).code);

  // The store wait's deadline, when it comes, changes nothing.
  r.plan.expire(store_wait);
  CHECK(r.out.answered.size() == 2);
  CHECK(r.plan.tensor(6)->failure.empty());
}

TEST_CASE("when no acknowledgement will free room, an operator's result fails with store full",
          "[planner]") {
  rig r{setup_of(1024)};
  for (ag::operand_id id = 1; id <= 4; ++id)
    r.submit(upload(cpu, id, filled(64, 1.0f)));
  CHECK(r.plan.store().live_bytes() == 1024);
  r.submit(upload(cpu, 5, filled(64, 5.0f)));
  CHECK(r.plan.held() == 0);
  const std::string why = "store full: from_vector -> #5 needs 256 bytes; 1024 of 1024 bytes "
                          "are held (graph_option::store_bytes)";
  CHECK(r.plan.tensor(5)->failure == why);
  CHECK_FALSE(r.plan.tensor(5)->placed);
  const auto f = r.fetch(5);
  CHECK(r.out.answer_of(f).code == ag::errc::device_failed);
  CHECK(r.out.answer_of(f).what == why);

  r.submit(compute(ag::op_kind::relu, cpu, 6, 1, 0, 64));
  CHECK_THAT(r.plan.tensor(6)->failure, StartsWith("store full: relu -> #6 on cpu needs 256"));
  r.drain();
  CHECK(r.out.batches(cpu) == 0);
  const auto s = r.sync();
  CHECK(r.out.answer_of(s).code == ag::errc::device_failed);
  CHECK(r.out.answer_of(s).what == why + " (and 1 more failures)");
}

// -- acknowledgements -----------------------------------------------------------------------------

TEST_CASE("lanes acknowledging in the opposite order of submission answer each wait when its own "
          "writer ran",
          "[planner]") {
  rig r;
  r.submit(upload(sim0, 1, {1}));
  r.submit(upload(sim1, 2, {2}));
  r.submit(move_to(cpu, 3, 1, 1));
  r.submit(move_to(cpu, 4, 2, 1));
  r.drain();
  REQUIRE(r.out.batches(sim0) == 1);
  REQUIRE(r.out.batches(sim1) == 1);
  const uint64_t at3 = r.plan.tensor(3)->offset;
  const uint64_t at4 = r.plan.tensor(4)->offset;
  CHECK(at3 != at4);
  const auto w3 = r.fetch(3);
  const auto w4 = r.fetch(4);
  const auto s = r.sync();
  CHECK(r.out.answers.empty());

  r.plan.done(sim1, 2, 4);
  CHECK(r.out.answered == std::vector<uint64_t>{w4});
  CHECK(r.out.answer_of(w4).offset == at4);

  r.plan.done(sim0, 2, 4);
  CHECK(r.out.answered == std::vector<uint64_t>{w4, w3, s});
  CHECK(r.out.answer_of(w3).offset == at3);
  CHECK_FALSE(r.out.answer_of(s).code);
  CHECK(r.plan.store().live_bytes() == 512); // the two cpu tensors; both stagings are free
}

TEST_CASE("a lane's batches acknowledged one at a time answer the syncs behind each in turn",
          "[planner]") {
  rig r;
  r.submit(upload(sim0, 1, {1, 2}));
  r.submit(compute(ag::op_kind::relu, sim0, 2, 1, 0, 2));
  r.drain();
  const auto sa = r.sync();
  r.submit(compute(ag::op_kind::relu, sim0, 3, 2, 0, 2));
  r.plan.release(1);
  r.drain();
  const auto sb = r.sync();
  r.plan.release(2);
  r.drain();
  const auto sc = r.sync();

  REQUIRE(r.out.batches(sim0) == 3);
  const auto& b = r.out.runs[sim0];
  CHECK(b[1].ops_before == 2);
  CHECK(b[1].ops_after() == 3);
  CHECK(b[1].no_hold == std::vector<ag::operand_id>{1});
  CHECK(b[2].ops_before == 3);
  CHECK(b[2].ops.empty()); // a release only
  CHECK(b[2].no_hold == std::vector<ag::operand_id>{2});
  CHECK(r.plan.lane(sim0).entries_sent == 5);

  r.plan.done(sim0, 2, 16);
  CHECK(r.out.answered == std::vector<uint64_t>{sa});
  CHECK(r.plan.lane(sim0).done == 2);
  CHECK(r.plan.lane(sim0).entries_done == 2);
  r.plan.done(sim0, 3, 16);
  CHECK(r.out.answered == std::vector<uint64_t>{sa, sb});
  CHECK(r.plan.lane(sim0).entries_done == 4);
  // Operators count, releases do not: the last batch is acknowledged with the same count.
  r.plan.done(sim0, 3, 8);
  CHECK(r.out.answered == std::vector<uint64_t>{sa, sb, sc});
  CHECK(r.plan.lane(sim0).entries_done == 5);
  CHECK(r.plan.stats().device_live == 8);
  for (auto w : {sa, sb, sc})
    CHECK_FALSE(r.out.answer_of(w).code);
}

// -- deadlines ------------------------------------------------------------------------------------

TEST_CASE("a sync whose lane never acknowledges times out naming the silent device", "[planner]") {
  rig r;
  r.submit(upload(sim0, 1, {1}));
  r.submit(upload(sim1, 2, {2}));
  r.drain();
  r.plan.done(sim1, 1, 4);
  const auto s = r.sync();
  CHECK(r.out.expiring.at(s) == 500ms);
  CHECK_FALSE(r.out.was_answered(s));
  r.plan.expire(s);
  const auto& a = r.out.answer_of(s);
  CHECK(a.code == ag::errc::timeout);
  CHECK(a.what == "sync: no acknowledgement within 500 ms from sim:0 (1 entries sent, 1 batches "
                  "unacknowledged)");
  r.plan.done(sim0, 1, 4); // too late: answered once
  CHECK(r.out.answers.at(s).size() == 1);
}

TEST_CASE("a read of a cpu tensor whose writer never acknowledges times out naming the device",
          "[planner]") {
  rig r;
  r.submit(upload(sim1, 1, {1}));
  r.submit(move_to(cpu, 2, 1, 1));
  r.drain();
  const auto f = r.fetch(2);
  CHECK(r.out.expiring.at(f) == 500ms);
  r.plan.expire(f);
  CHECK(r.out.answer_of(f).code == ag::errc::timeout);
  CHECK(r.out.answer_of(f).what
        == "to_vector: tensor #2 not written within 500 ms: sim:1 has not acknowledged it");
  r.plan.done(sim1, 2, 4);
  CHECK(r.out.answers.at(f).size() == 1);
  // A deadline of a wait answered already changes nothing.
  const auto g = r.fetch(2);
  CHECK_FALSE(r.out.answer_of(g).code);
  r.plan.expire(g);
  CHECK(r.out.answers.at(g).size() == 1);
}

TEST_CASE("an operator waiting for store space past its deadline fails with store full",
          "[planner]") {
  rig r{setup_of(1024)};
  for (ag::operand_id id = 1; id <= 4; ++id)
    r.submit(upload(sim0, id, filled(64, 1.0f)));
  r.drain();
  r.submit(upload(sim0, 5, filled(64, 5.0f)));
  REQUIRE(r.plan.held() == 1);
  const uint64_t store_wait = r.out.last_expiring;
  const auto s = r.sync();
  REQUIRE(r.plan.held() == 2);

  SECTION("the operator's deadline") {
    r.plan.expire(store_wait);
    CHECK(r.plan.held() == 0);
    const auto* t = r.plan.tensor(5);
    REQUIRE(t != nullptr);
    CHECK_FALSE(t->placed);
    CHECK(t->failure == "store full: from_vector -> #5 needs 256 bytes; 1024 of 1024 bytes are "
                        "held (graph_option::store_bytes); no acknowledgement freed enough "
                        "within 500 ms");
    // The sync behind it waits for what came before it, then reports the failure.
    CHECK_FALSE(r.out.was_answered(s));
    r.plan.done(sim0, 4, 1024);
    CHECK(r.out.answer_of(s).code == ag::errc::device_failed);
    CHECK(r.out.answer_of(s).what == t->failure);
    r.drain();
    CHECK(r.out.batches(sim0) == 1);
  }
  SECTION("the deadline of the sync behind it") {
    r.plan.expire(s);
    CHECK(r.out.answer_of(s).code == ag::errc::timeout);
    CHECK(r.out.answer_of(s).what
          == "sync: waited 500 ms behind upload -> #5 on sim:0, which waits for room in the "
             "store (1024 of 1024 bytes are held, graph_option::store_bytes)");
    CHECK(r.plan.held() == 2);
    r.plan.done(sim0, 4, 1024); // the upload is placed; the sync was answered already
    CHECK(r.plan.held() == 0);
    CHECK(r.plan.tensor(5)->failure.empty());
    r.drain();
    CHECK(r.out.batches(sim0) == 2);
    CHECK(r.out.answers.at(s).size() == 1);
  }
}

// -- start-up -------------------------------------------------------------------------------------

TEST_CASE("start-up is over once every lane is ready", "[planner]") {
  rig r;
  const auto w = r.plan.new_wait();
  r.plan.wait_ready(w);
  CHECK_FALSE(r.plan.ready(cpu));
  CHECK_FALSE(r.plan.ready(sim1));
  CHECK_FALSE(r.out.was_answered(w));
  CHECK(r.plan.ready(sim0));
  CHECK_FALSE(r.out.answer_of(w).code);
  const auto later = r.plan.new_wait();
  r.plan.wait_ready(later);
  CHECK_FALSE(r.out.answer_of(later).code);
  r.plan.start_deadline(1000ms); // every lane came: nothing happens
  CHECK(r.out.answered.size() == 2);
  CHECK_FALSE(r.plan.ready(7)); // no such lane
}

TEST_CASE("start-up fails naming the device that was not ready by its deadline", "[planner]") {
  rig r;
  CHECK_FALSE(r.plan.ready(cpu));
  CHECK_FALSE(r.plan.ready(sim0));
  const auto w = r.plan.new_wait();
  r.plan.wait_ready(w);
  r.plan.start_deadline(2000ms);
  const std::string why = "start-up: no devicesReady from sim:1 within 2000 ms";
  CHECK(r.out.answer_of(w).code == ag::errc::device_failed);
  CHECK(r.out.answer_of(w).what == why);
  CHECK_FALSE(r.plan.ready(sim1)); // too late
  const auto later = r.plan.new_wait();
  r.plan.wait_ready(later);
  CHECK(r.out.answer_of(later).what == why);
}

TEST_CASE("a lane going down before it is ready fails start-up", "[planner]") {
  rig r{setup_of(64 << 10, true)};
  CHECK_FALSE(r.plan.ready(cpu));
  const auto w = r.plan.new_wait();
  r.plan.wait_ready(w);
  r.plan.lane_down(sim0, "runner of sim:0 stopped: exited with code 3");
  CHECK(r.out.answer_of(w).code == ag::errc::device_failed);
  CHECK(r.out.answer_of(w).what == "runner of sim:0 stopped before it was ready: runner of sim:0 "
                                   "stopped: exited with code 3");
  CHECK(r.out.kills.empty());
  CHECK_FALSE(r.plan.ready(sim1));
  CHECK(r.out.answers.at(w).size() == 1);
}

// -- shutdown -------------------------------------------------------------------------------------

TEST_CASE("stop answers every pending wait, and every later one, saying the runtime was destroyed",
          "[planner]") {
  rig r{setup_of(768)};
  const auto ready = r.plan.new_wait();
  r.plan.wait_ready(ready);
  r.submit(upload(sim0, 1, {1}));
  r.submit(move_to(cpu, 2, 1, 1));
  r.drain();
  const auto s = r.sync();  // waits for sim:0
  const auto f = r.fetch(2); // waits for sim:0
  const auto p = r.plan.new_wait();
  r.plan.fetch_piece(p, 1, 0, 1); // waits for sim:0
  r.submit(upload(sim0, 3, filled(64, 3.0f)));
  REQUIRE(r.plan.held() == 1); // the store is full of ranges sim:0 has yet to acknowledge
  const auto hs = r.sync();
  const auto hf = r.fetch(2);
  REQUIRE(r.plan.held() == 3);
  CHECK(r.out.answers.empty());

  r.plan.stop();
  CHECK(r.plan.stopping());
  CHECK(r.plan.held() == 0);
  for (auto w : {ready, s, f, p, hs, hf}) {
    INFO("wait " << w);
    REQUIRE(r.out.answers.count(w) == 1);
    CHECK(r.out.answer_of(w).code == ag::errc::device_failed);
    CHECK_THAT(r.out.answer_of(w).what, Contains("the runtime was destroyed while it waited"));
  }
  CHECK(r.out.answer_of(s).what == "sync: the runtime was destroyed while it waited");
  CHECK(r.out.answer_of(f).what
        == "to_vector of tensor #2: the runtime was destroyed while it waited");
  CHECK(r.out.answer_of(ready).what == "start-up: the runtime was destroyed while it waited");
  CHECK(r.out.answered.size() == 6);

  const auto later_sync = r.sync();
  const auto later_fetch = r.fetch(2);
  const auto later_piece = r.plan.new_wait();
  r.plan.fetch_piece(later_piece, 1, 0, 1);
  const auto later_ready = r.plan.new_wait();
  r.plan.wait_ready(later_ready);
  for (auto w : {later_sync, later_fetch, later_piece, later_ready}) {
    INFO("wait " << w);
    REQUIRE(r.out.answers.count(w) == 1);
    CHECK(r.out.answer_of(w).code == ag::errc::device_failed);
    CHECK_THAT(r.out.answer_of(w).what, Contains("the runtime was destroyed while it waited"));
  }

  // Acknowledgements after stop answer nothing twice.
  r.plan.done(sim0, 3, 0);
  for (const auto& [w, list] : r.out.answers)
    CHECK(list.size() == 1);
}

TEST_CASE("the credits of an operator come back once its lane acknowledged it", "[planner]") {
  auto s = setup_of();
  s.flow = lanes_flow();
  auto fc = s.flow;
  rig r{std::move(s)};
  // As a user's thread does: a credit on the lane, and the upload's bytes, before submitting.
  REQUIRE(fc->acquire(sim0, 8, 0ms).empty());
  r.submit(upload(sim0, 1, {1, 2}));
  r.drain();
  REQUIRE(fc->acquire(cpu, 4, 0ms).empty());
  r.submit(upload(cpu, 2, {3}));
  REQUIRE(fc->acquire(sim0, 0, 0ms).empty());
  r.submit(compute(ag::op_kind::relu, sim0, 3, 1, 0, 2));
  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  auto st = fc->stats();
  CHECK(st.bytes == 0); // in the store now
  CHECK(st.ops == std::vector<uint64_t>{0, 2, 0}); // the cpu upload needed no runner
  r.plan.done(sim0, 1, 8);
  CHECK(fc->stats().ops == std::vector<uint64_t>{0, 1, 0});
  r.plan.done(sim0, 2, 16);
  CHECK(fc->stats().ops == std::vector<uint64_t>{0, 0, 0});
}

// -- waits the user's thread answers on the completion board --------------------------------------

namespace {

// A rig whose planner counts its faults on a board, as on the shared-memory path.
struct board_rig {
  ag::local_board board{3};
  rig r{with_board(board)};

  static ag::planner_setup with_board(ag::local_board& b) {
    auto s = setup_of();
    s.board = &b.board();
    s.runners_see_board = true;
    return s;
  }
};

} // namespace

TEST_CASE("a read ticket names the writer of a cpu tensor and where it is, and a sync ticket every "
          "lane's entries",
          "[planner]") {
  rig plain; // without a board: no tickets
  plain.submit(upload(cpu, 1, {1, 2}));
  plain.drain();
  CHECK_FALSE(plain.plan.read_ticket(1).valid);
  CHECK_FALSE(plain.plan.sync_ticket().valid);

  board_rig b;
  auto& r = b.r;
  moved_from_sim0(r, cpu); // #2: a cpu tensor sim:0's operator 2 writes
  const auto t = r.plan.read_ticket(2);
  REQUIRE(t.valid);
  CHECK(t.lane == sim0);
  CHECK(t.index == 2);
  CHECK(t.offset == 256);
  CHECK(t.faults == b.board.board().faults());
  CHECK_FALSE(r.plan.read_ticket(1).valid);  // a device tensor: the executor stages it
  CHECK_FALSE(r.plan.read_ticket(99).valid); // no such tensor: the executor says so
  const auto s = r.plan.sync_ticket();
  REQUIRE(s.valid);
  CHECK(s.entries == std::vector<uint64_t>{0, 2, 0});
}

TEST_CASE("a failure makes every ticket taken before stale and none is given for what it "
          "touches, and stop makes them stale too",
          "[planner]") {
  board_rig b;
  auto& r = b.r;
  moved_from_sim0(r, cpu);
  r.submit(upload(sim1, 3, {5, 6}));
  r.submit(move_to(cpu, 4, 3, 2)); // #4: written by sim:1
  r.drain();
  const auto before = r.plan.read_ticket(4);
  REQUIRE(before.valid);
  r.plan.failed(sim0, 1, "fill: bad launch");
  CHECK(b.board.board().faults() > before.faults); // a waiter on `before` asks the executor
  CHECK_FALSE(r.plan.read_ticket(2).valid);       // tainted: the executor answers the error
  CHECK_FALSE(r.plan.sync_ticket().valid);        // a failure the next sync reports
  r.plan.done(sim1, 2, 8);
  const auto w = r.sync();
  CHECK(r.out.answer_of(w).code);
  CHECK(r.plan.read_ticket(4).valid); // sim:1's tensor is healthy
  CHECK_FALSE(r.plan.sync_ticket().valid); // a lane failed: syncs are the executor's
  const auto faults = b.board.board().faults();
  r.plan.stop();
  CHECK(b.board.board().faults() > faults);
  CHECK_FALSE(r.plan.read_ticket(4).valid);
}

TEST_CASE("the planner has heard the board once every acknowledgement published there reached it",
          "[planner]") {
  board_rig b;
  auto& r = b.r;
  r.submit(upload(sim0, 1, {1, 2}));
  r.drain();
  CHECK(r.plan.heard_board());
  b.board.board().completed(sim0, 1, 1); // the runner published; its message is on its way
  CHECK_FALSE(r.plan.heard_board());
  r.plan.done(sim0, 1, 8);
  CHECK(r.plan.heard_board());
}
