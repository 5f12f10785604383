// The planner's collectives through the store: chunks, cpu parts, store room, failures, credits.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "actors/planner.hpp"
#include "graph/collective.hpp"
#include "tests/actors/planner_collective_helpers.hpp"

using namespace std::chrono_literals;
using Catch::Contains;
using Catch::StartsWith;
using namespace ag::test;

// -- the operators of one chunk -------------------------------------------------------------------

TEST_CASE("an all_reduce of two device parts in one chunk stages each part on its lane and sums "
          "them on the cpu lane once both staging copies ran",
          "[planner][collectives]") {
  rig r;
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  r.submit(upload(sim1, 2, {10, 20, 30, 40}));
  emu.run_all();
  REQUIRE(r.plan.store().live_bytes() == 0);

  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4},
                      {sim0, sim1}, 4));
  CHECK(r.plan.held() == 0); // placed whole at once
  // The queues before any dispatch, with their cross-lane dependencies.
  const auto& q0 = r.plan.lane(sim0).queue;
  const auto& q1 = r.plan.lane(sim1).queue;
  const auto& qc = r.plan.lane(cpu).queue;
  REQUIRE(q0.size() == 2);
  REQUIRE(q1.size() == 2);
  REQUIRE(qc.size() == 1);
  CHECK(fields(q0[0].op) == copy_fields({0, 0}, {1, no_offset}, 4));
  CHECK(q0[0].deps.empty());
  CHECK(fields(q1[0].op) == copy_fields({0, 256}, {2, no_offset}, 4));
  CHECK(q1[0].deps.empty());
  CHECK(fields(qc[0].op) == add_fields({0, 512}, {0, 0}, {0, 256}, 4));
  CHECK(deps_str(qc[0].deps) == "1:2 2:2");
  CHECK(fields(q0[1].op) == copy_fields({3, no_offset}, {0, 512}, 4));
  CHECK(deps_str(q0[1].deps) == "0:1");
  CHECK(fields(q1[1].op) == copy_fields({4, no_offset}, {0, 512}, 4));
  CHECK(deps_str(q1[1].deps) == "0:1");
  CHECK(r.plan.store().live_bytes() == 768);
  for (ag::operand_id id : {3, 4}) {
    const auto* t = r.plan.tensor(id);
    REQUIRE(t != nullptr);
    CHECK(t->lane == (id == 3 ? sim0 : sim1));
    CHECK(t->placed);
    CHECK(t->failure.empty());
    CHECK(t->bytes == 16);
  }

  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  REQUIRE(r.out.batches(sim1) == 2);
  CHECK(r.out.runs[sim0].back().ops.size() == 1); // the staging copy; the copy in waits
  CHECK(r.out.runs[sim1].back().ops.size() == 1);
  CHECK(r.out.batches(cpu) == 0);

  REQUIRE(emu.step(sim0));
  r.drain();
  CHECK(r.out.batches(cpu) == 0); // sim:1 has not staged its part yet
  CHECK(r.out.batches(sim0) == 2);
  REQUIRE(emu.step(sim1));
  r.drain();
  REQUIRE(r.out.batches(cpu) == 1);
  REQUIRE(r.out.runs[cpu][0].ops.size() == 1);
  CHECK(r.out.runs[cpu][0].ops[0].kind == ag::op_kind::add);
  CHECK(r.out.batches(sim0) == 2); // the copies in wait for the sum
  CHECK(r.out.batches(sim1) == 2);
  CHECK(r.floats_at(0, 4) == std::vector<float>{1, 2, 3, 4});
  CHECK(r.floats_at(256, 4) == std::vector<float>{10, 20, 30, 40});

  REQUIRE(emu.step(cpu));
  r.drain();
  REQUIRE(r.out.batches(sim0) == 3);
  REQUIRE(r.out.batches(sim1) == 3);
  CHECK(r.plan.pending_frees() > 0); // the copies in still read the sum
  emu.run_all();
  CHECK(emu.on(sim0, 3) == std::vector<float>{11, 22, 33, 44});
  CHECK(emu.on(sim1, 4) == std::vector<float>{11, 22, 33, 44});
  CHECK(r.plan.pending_frees() == 0);
  CHECK(r.plan.store().live_bytes() == 0);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("three parts are summed in part order into one accumulator and each add waits only for "
          "the part it adds",
          "[planner][collectives]") {
  rig r;
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2}));
  r.submit(upload(cpu, 2, {10, 20}));
  r.submit(upload(sim1, 3, {100, 200}));
  emu.run_all();
  const uint64_t at2 = r.plan.tensor(2)->offset;

  r.submit(collective(ag::collective_kind::all_reduce, {1, 2, 3}, {sim0, cpu, sim1}, {4, 5},
                      {sim1, cpu}, 2));
  const auto& qc = r.plan.lane(cpu).queue;
  REQUIRE(qc.size() == 3); // two adds and the copy into the cpu result
  const auto& s0 = r.plan.lane(sim0).queue.at(0).op;
  const auto& s2 = r.plan.lane(sim1).queue.at(0).op;
  CHECK(s0.a.id == 1);
  CHECK(s2.a.id == 3);
  const ag::operand_ref acc = qc[0].op.out;
  CHECK(acc.id == 0);
  CHECK(fields(qc[0].op) == add_fields(acc, s0.out, {0, at2}, 2)); // part 0 + part 1, in place
  CHECK(deps_str(qc[0].deps) == "1:2");
  CHECK(fields(qc[1].op) == add_fields(acc, acc, s2.out, 2)); // + part 2
  CHECK(deps_str(qc[1].deps) == "2:2");
  CHECK(fields(qc[2].op) == copy_fields({5, r.plan.tensor(5)->offset}, acc, 2));

  r.drain();
  CHECK(r.out.batches(cpu) == 0);
  REQUIRE(emu.step(sim0));
  r.drain();
  REQUIRE(r.out.batches(cpu) == 1);
  CHECK(r.out.runs[cpu][0].ops.size() == 1); // the first add; the second waits for sim:1
  REQUIRE(emu.step(cpu));
  r.drain();
  CHECK(r.out.batches(cpu) == 1);
  emu.run_all();
  CHECK(emu.on(sim1, 4) == std::vector<float>{111, 222});
  CHECK(r.floats_at(r.plan.tensor(5)->offset, 2) == std::vector<float>{111, 222});
}

// -- chunks ---------------------------------------------------------------------------------------

TEST_CASE("a collective larger than one chunk is placed in chunks sized from the store and every "
          "kind gives the right values",
          "[planner][collectives]") {
  rig r{setup_of(small_store)};
  emulator emu{r};
  // chunk: 3072 / 4 / (parts + 1) / 4 elements: 64 for two parts, 96 for one.

  SECTION("all_reduce") {
    two_device_parts(r, emu, 160); // 2.5 chunks
    r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4},
                        {sim0, sim1}, 160));
    emu.run_all();
    const std::string chunks = "0+64/160 64+64/160 128+32/160";
    CHECK(pieces_from(r, sim0, 1) == chunks);
    CHECK(pieces_from(r, sim1, 2) == chunks);
    CHECK(pieces_into(r, sim0, 3) == chunks);
    CHECK(pieces_into(r, sim1, 4) == chunks);
    CHECK(count_kind(r.ops_of(cpu), ag::op_kind::add) == 3);
    const auto want = sum_of(ramp(160, 0), ramp(160, 1000));
    CHECK(emu.on(sim0, 3) == want);
    CHECK(emu.on(sim1, 4) == want);
  }
  SECTION("broadcast") {
    r.submit(upload(sim0, 1, ramp(240, 7)));
    emu.run_all();
    r.submit(collective(ag::collective_kind::broadcast, {1}, {sim0}, {3, 4}, {sim0, sim1}, 240));
    emu.run_all();
    const std::string chunks = "0+96/240 96+96/240 192+48/240";
    CHECK(pieces_from(r, sim0, 1) == chunks);
    CHECK(pieces_into(r, sim0, 3) == chunks);
    CHECK(pieces_into(r, sim1, 4) == chunks);
    CHECK(r.ops_of(cpu).empty()); // nothing to sum
    CHECK(emu.on(sim0, 3) == ramp(240, 7));
    CHECK(emu.on(sim1, 4) == ramp(240, 7));
  }
  SECTION("all_gather") {
    two_device_parts(r, emu, 160);
    r.submit(collective(ag::collective_kind::all_gather, {1, 2}, {sim0, sim1}, {3, 4},
                        {sim0, sim1}, 160));
    emu.run_all();
    const std::string part = "0+64/160 64+64/160 128+32/160";
    CHECK(pieces_from(r, sim0, 1) == part);
    CHECK(pieces_from(r, sim1, 2) == part);
    const std::string result = "0+64/320 64+64/320 128+32/320 160+64/320 224+64/320 288+32/320";
    CHECK(pieces_into(r, sim0, 3) == result);
    CHECK(pieces_into(r, sim1, 4) == result);
    CHECK(r.ops_of(cpu).empty());
    auto want = ramp(160, 0);
    const auto second = ramp(160, 1000);
    want.insert(want.end(), second.begin(), second.end());
    CHECK(emu.on(sim0, 3) == want);
    CHECK(emu.on(sim1, 4) == want);
  }
  SECTION("reduce_scatter") {
    two_device_parts(r, emu, 320); // blocks of 160: 2.5 chunks each
    r.submit(collective(ag::collective_kind::reduce_scatter, {1, 2}, {sim0, sim1}, {3, 4},
                        {sim0, sim1}, 320));
    CHECK(r.plan.held() == 1); // six chunks of 768 bytes: not all at once
    emu.run_all();
    CHECK(r.plan.held() == 0);
    const std::string part =
      "0+64/320 64+64/320 128+32/320 160+64/320 224+64/320 288+32/320";
    CHECK(pieces_from(r, sim0, 1) == part);
    CHECK(pieces_from(r, sim1, 2) == part);
    // Result r receives block r only, as its own elements [0, 160).
    const std::string block = "0+64/160 64+64/160 128+32/160";
    CHECK(pieces_into(r, sim0, 3) == block);
    CHECK(pieces_into(r, sim1, 4) == block);
    CHECK(count_kind(r.ops_of(cpu), ag::op_kind::add) == 6);
    const auto sum = sum_of(ramp(320, 0), ramp(320, 1000));
    CHECK(emu.on(sim0, 3) == slice(sum, 0, 160));
    CHECK(emu.on(sim1, 4) == slice(sum, 160, 160));
  }

  CHECK(r.plan.held() == 0);
  CHECK(r.plan.pending_frees() == 0);
  CHECK(r.plan.store().live_bytes() == 0);
  for (ag::operand_id id : {3, 4})
    CHECK(r.plan.tensor(id)->failure.empty());
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

// -- cpu parts and results ------------------------------------------------------------------------

TEST_CASE("a cpu part is read in place and a cpu result gets its store range before any chunk",
          "[planner][collectives]") {
  rig r;
  emulator emu{r};
  r.submit(upload(cpu, 1, {1, 2, 3, 4}));
  r.submit(upload(sim0, 2, {10, 20, 30, 40}));
  emu.run_all();
  REQUIRE(r.plan.tensor(1)->offset == 0);

  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {cpu, sim0}, {3, 4}, {cpu, sim1},
                      4));
  const auto* t = r.plan.tensor(3);
  REQUIRE(t != nullptr);
  CHECK(t->lane == cpu);
  CHECK(t->offset == 256); // the first range after #1: taken before the chunk's ranges
  CHECK(t->bytes == 16);
  // One staging range (sim:0's part) and the sum: #1 is read where it is.
  const auto& q0 = r.plan.lane(sim0).queue;
  const auto& qc = r.plan.lane(cpu).queue;
  REQUIRE(q0.size() == 1);
  CHECK(fields(q0[0].op) == copy_fields({0, 512}, {2, no_offset}, 4));
  REQUIRE(qc.size() == 2);
  CHECK(fields(qc[0].op) == add_fields({0, 768}, {0, 0}, {0, 512}, 4));
  CHECK(deps_str(qc[0].deps) == "1:2");
  CHECK(fields(qc[1].op) == copy_fields({3, 256}, {0, 768}, 4));
  CHECK(t->writer.lane == cpu);
  CHECK(t->writer.index == 2);
  const auto& q1 = r.plan.lane(sim1).queue;
  REQUIRE(q1.size() == 1);
  CHECK(fields(q1[0].op) == copy_fields({4, no_offset}, {0, 768}, 4));
  CHECK(deps_str(q1[0].deps) == "0:1");

  const auto f = r.fetch(3);
  r.drain();
  CHECK_FALSE(r.out.was_answered(f));
  REQUIRE(emu.step(sim0));
  r.drain();
  REQUIRE(r.out.batches(cpu) == 1);
  CHECK(r.out.runs[cpu][0].ops.size() == 2);
  CHECK_FALSE(r.out.was_answered(f)); // written, not yet acknowledged
  REQUIRE(emu.step(cpu));
  const auto& a = r.out.answer_of(f);
  CHECK_FALSE(a.code);
  CHECK(a.offset == 256);
  CHECK(r.floats_at(256, 4) == std::vector<float>{11, 22, 33, 44});
  emu.run_all();
  CHECK(emu.on(sim1, 4) == std::vector<float>{11, 22, 33, 44});
  CHECK_FALSE(reads_operand(r.ops_of(cpu), 1)); // no operator names #1: its range is read
  CHECK(r.floats_at(0, 4) == std::vector<float>{1, 2, 3, 4});
  CHECK(r.plan.store().live_bytes() == 512); // #1 and #3
}

TEST_CASE("a read of a cpu result made in several chunks is answered once its last chunk is "
          "acknowledged",
          "[planner][collectives]") {
  rig r{setup_of(small_store)};
  emulator emu{r};
  r.submit(upload(cpu, 1, ramp(160, 0)));      // ranges 0-2
  r.submit(upload(sim0, 2, ramp(160, 1000)));
  emu.run_all();
  r.submit(upload(cpu, 9, filled(256, 9.0f))); // ranges 3-6
  // Five ranges left: the result's three and one chunk's two (sim:0's staging and the sum).
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {cpu, sim0}, {3, 4}, {cpu, sim1},
                      160));
  CHECK(r.plan.held() == 1);
  const uint64_t at3 = r.plan.tensor(3)->offset;
  CHECK(at3 == 1792);
  const auto f = r.fetch(3);
  CHECK(r.plan.held() == 2);

  for (int guard = 0;; ++guard) {
    REQUIRE(guard < 100);
    for (bool any = true; any;) { // the devices run all they can
      r.drain();
      any = false;
      while (emu.step(sim0) || emu.step(sim1))
        any = true;
    }
    r.drain();
    if (r.plan.held() == 0 && r.plan.lane(sim0).done == r.plan.lane(sim0).issued)
      break;
    INFO("held " << r.plan.held() << " issued " << r.plan.lane(cpu).issued << "/"
                 << r.plan.lane(sim0).issued << "/" << r.plan.lane(sim1).issued << " done "
                 << r.plan.lane(cpu).done << "/" << r.plan.lane(sim0).done << "/"
                 << r.plan.lane(sim1).done << " queued " << r.plan.lane(cpu).queue.size() << "/"
                 << r.plan.lane(sim0).queue.size() << "/" << r.plan.lane(sim1).queue.size()
                 << " frees " << r.plan.pending_frees() << " live "
                 << r.plan.store().live_bytes());
    REQUIRE(emu.step(cpu));
    CHECK_FALSE(r.out.was_answered(f));
  }
  // Every chunk is placed; the cpu lane has yet to run the last copy into #3.
  CHECK_FALSE(r.out.was_answered(f));
  const auto* t = r.plan.tensor(3);
  CHECK(t->writer.lane == cpu);
  CHECK(t->writer.index == r.plan.lane(cpu).issued);
  CHECK(r.plan.lane(cpu).done < t->writer.index);
  while (!r.out.was_answered(f))
    REQUIRE(emu.step(cpu));
  CHECK(r.plan.lane(cpu).done >= t->writer.index);
  const auto& a = r.out.answer_of(f);
  CHECK_FALSE(a.code);
  CHECK(a.offset == at3);
  const auto want = sum_of(ramp(160, 0), ramp(160, 1000));
  CHECK(r.floats_at(at3, 160) == want);
  // Each chunk was copied into the result's own range, at its place.
  std::vector<std::string> into;
  for (const auto& op : r.ops_of(cpu))
    if (op.out.id == 3)
      into.push_back(std::to_string(op.out.offset - at3) + "+" + std::to_string(op.count) + " m="
                     + std::to_string(op.m) + " n=" + std::to_string(op.n));
  CHECK(into == std::vector<std::string>{"0+64 m=0 n=0", "256+64 m=0 n=0", "512+32 m=0 n=0"});
  emu.run_all();
  CHECK(emu.on(sim1, 4) == want);
  CHECK(r.floats_at(0, 160) == ramp(160, 0));
  CHECK(r.floats_at(r.plan.tensor(9)->offset, 256) == filled(256, 9.0f));
}

// -- store pressure -------------------------------------------------------------------------------

namespace {

// #1 on sim:0 and #2 on sim:1 (160 elements each: three chunks of 64), and a cpu tensor #9 that
// takes half the store: two chunks fit, the third waits for the first to be freed. all_reduce
// into #3 on sim:0 and #4 on sim:1.
void pressured_all_reduce(rig& r, emulator& emu) {
  two_device_parts(r, emu, 160);
  r.submit(upload(cpu, 9, filled(384, 9.0f)));
  REQUIRE(r.plan.store().live_bytes() == 1536);
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4},
                      {sim0, sim1}, 160));
}

} // namespace

TEST_CASE("a collective that finds no store room waits for acknowledgements to free it and what "
          "comes after it waits behind it",
          "[planner][collectives]") {
  rig r{setup_of(small_store)};
  emulator emu{r};
  pressured_all_reduce(r, emu);
  CHECK(r.plan.held() == 1);
  const uint64_t store_wait = r.out.last_expiring;
  CHECK(r.out.expiring.at(store_wait) == 500ms);
  CHECK(r.plan.store().live_bytes() == small_store);
  CHECK(r.plan.lane(sim0).issued == 1 + 4); // the upload, then two chunks' staging and copy in
  CHECK(r.plan.lane(sim1).issued == 1 + 4);
  CHECK(r.plan.lane(cpu).issued == 2);
  CHECK(pieces_into(r, sim0, 3).empty()); // nothing dispatched yet
  // Submitted after it: placed after it, even where it needs no store room.
  r.submit(compute(ag::op_kind::relu, sim0, 10, 3, 0, 160));
  const auto s = r.sync();
  CHECK(r.plan.held() == 3);
  CHECK(r.plan.tensor(10) == nullptr);

  r.drain();
  REQUIRE(emu.step(sim0)); // staging of chunk 1
  REQUIRE(emu.step(sim1));
  r.drain();
  REQUIRE(emu.step(cpu)); // its sum
  r.drain();
  REQUIRE(emu.step(sim0)); // its copy in, and the staging of chunk 2
  r.drain();
  // Chunk 1's ranges are still read by sim:1's copy in: nothing more is placed.
  CHECK(r.plan.held() == 3);
  CHECK(r.plan.lane(sim0).issued == 5);
  CHECK(r.plan.lane(cpu).issued == 2);
  CHECK(r.plan.store().live_bytes() == small_store);
  CHECK_FALSE(r.out.was_answered(s));

  REQUIRE(emu.step(sim1)); // every operator of chunk 1 ran: its ranges are free
  CHECK(r.plan.held() == 0);
  CHECK(r.plan.lane(sim0).issued == 5 + 2 + 1); // chunk 3, then the relu
  CHECK(r.plan.lane(cpu).issued == 3);
  REQUIRE(r.plan.tensor(10) != nullptr);
  CHECK(r.plan.tensor(10)->failure.empty());
  const auto& q0 = r.plan.lane(sim0).queue;
  REQUIRE_FALSE(q0.empty());
  CHECK(q0.back().op.kind == ag::op_kind::relu);
  CHECK(q0.back().op.a.id == 3);

  emu.run_all();
  const auto want = sum_of(ramp(160, 0), ramp(160, 1000));
  CHECK(emu.on(sim0, 3) == want);
  CHECK(emu.on(sim1, 4) == want);
  CHECK(emu.on(sim0, 10) == want);
  const auto ops = r.ops_of(sim0);
  std::size_t last_piece = 0, relu = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].out.id == 3)
      last_piece = i;
    if (ops[i].kind == ag::op_kind::relu)
      relu = i;
  }
  CHECK(relu > last_piece);
  CHECK(pieces_into(r, sim0, 3) == "0+64/160 64+64/160 128+32/160");
  CHECK_FALSE(r.out.answer_of(s).code);
  CHECK(r.plan.store().live_bytes() == 1536); // #9 alone

  // Its deadline, when it comes, changes nothing.
  r.plan.expire(store_wait);
  CHECK(r.plan.tensor(3)->failure.empty());
  CHECK(r.plan.tensor(4)->failure.empty());
}

TEST_CASE("a collective with no store room and no acknowledgement to wait for fails with store "
          "full",
          "[planner][collectives]") {
  rig r{setup_of(small_store)};
  emulator emu{r};
  two_device_parts(r, emu, 160);
  r.submit(upload(cpu, 9, filled(768, 9.0f))); // the whole store
  REQUIRE(r.plan.store().live_bytes() == small_store);
  REQUIRE(r.plan.pending_frees() == 0);
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4},
                      {sim0, sim1}, 160));
  CHECK(r.plan.held() == 0);
  const std::string why = "store full: a chunk of all_reduce of #1,#2 (2 x 160 elements) needs "
                          "768 bytes; 3072 of 3072 bytes are held (graph_option::store_bytes)";
  for (ag::operand_id id : {3, 4}) {
    INFO("result #" << id);
    const auto* t = r.plan.tensor(id);
    REQUIRE(t != nullptr);
    CHECK(t->failure == why);
    CHECK_FALSE(t->placed); // never created on its device
  }
  r.drain();
  CHECK(r.plan.lane(sim0).issued == 1);
  CHECK(r.plan.lane(sim1).issued == 1);
  CHECK(r.plan.lane(cpu).issued == 0);
  const auto s = r.sync();
  CHECK(r.out.answer_of(s).code == ag::errc::device_failed);
  CHECK(r.out.answer_of(s).what == why);
}

TEST_CASE("a collective still waiting for store room at its deadline fails with store full and "
          "fills the rest of its results with NaN",
          "[planner][collectives]") {
  rig r{setup_of(small_store)};
  emulator emu{r};
  pressured_all_reduce(r, emu);
  REQUIRE(r.plan.held() == 1);
  const uint64_t store_wait = r.out.last_expiring;
  r.submit(compute(ag::op_kind::relu, sim0, 10, 3, 0, 160));
  r.drain();

  r.plan.expire(store_wait);
  CHECK(r.plan.held() == 0);
  const std::string why = "store full: a chunk of all_reduce of #1,#2 (2 x 160 elements) needs "
                          "384 bytes; 3072 of 3072 bytes are held (graph_option::store_bytes); no "
                          "acknowledgement freed enough within 500 ms";
  CHECK(r.plan.tensor(3)->failure == why);
  CHECK(r.plan.tensor(4)->failure == why);
  CHECK(r.plan.tensor(3)->placed); // partly made: whole, with NaN for the rest
  CHECK_THAT(r.plan.tensor(10)->failure, Contains("input #3 failed: " + why));
  for (uint32_t l : {sim0, sim1}) {
    INFO("lane " << l);
    const auto& e = r.plan.lane(l).queue.back();
    CHECK(e.op.kind == ag::op_kind::fill);
    CHECK(std::isnan(e.op.scalar));
    CHECK(fields(e.op)
          == fields(ag::make_op(ag::op_kind::fill, {l == sim0 ? 3u : 4u, no_offset}, {}, {}, 32,
                                128, 0, 160)));
  }
  emu.run_all();
  for (auto [l, id] : std::vector<std::pair<uint32_t, ag::operand_id>>{{sim0, 3}, {sim1, 4}}) {
    INFO("result #" << id);
    const auto& v = emu.on(l, id);
    REQUIRE(v.size() == 160);
    CHECK(slice(v, 0, 128) == slice(sum_of(ramp(160, 0), ramp(160, 1000)), 0, 128));
    CHECK(all_nan(slice(v, 128, 32)));
  }
  CHECK(emu.mem[sim0].count(10) == 0); // never run
  const auto s = r.sync();
  CHECK(r.out.answer_of(s).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(s).what, StartsWith(why));
  CHECK(r.plan.store().live_bytes() == 1536);
}

TEST_CASE("a collective whose cpu result finds no store room issues no operator",
          "[planner][collectives]") {
  rig r{setup_of(small_store)};
  emulator emu{r};
  r.submit(upload(cpu, 1, ramp(160, 0)));       // ranges 0-2
  r.submit(upload(cpu, 9, filled(576, 9.0f)));  // ranges 3-11: the store is full
  REQUIRE(r.plan.store().live_bytes() == small_store);
  REQUIRE(r.plan.pending_frees() == 0);
  // A broadcast from a cpu part needs no staging range: only the cpu result's range, which the
  // store does not have, and nothing will free one.
  r.submit(collective(ag::collective_kind::broadcast, {1}, {cpu}, {3, 4}, {cpu, sim1}, 160));
  CHECK(r.plan.held() == 0);
  const std::string why = "store full: broadcast of #1 (1 x 160 elements to 2 devices) needs 640 "
                          "bytes; 3072 of 3072 bytes are held (graph_option::store_bytes)";
  for (ag::operand_id id : {3, 4}) {
    INFO("result #" << id);
    const auto* t = r.plan.tensor(id);
    REQUIRE(t != nullptr);
    CHECK(t->failure == why);
    CHECK_FALSE(t->placed);
  }
  r.drain();
  // Nothing is left to do for results that failed; above all nothing writes the store where no
  // range was given.
  CHECK(r.plan.lane(cpu).issued == 0);
  CHECK(r.plan.lane(sim1).issued == 0);
  for (const auto& op : r.ops_of(cpu)) {
    INFO(fields(op));
    CHECK(op.out.on_host());
    if (op.out.on_host())
      CHECK(op.out.offset % ag::store_allocator::alignment == 0);
  }
  emu.run_all();
  CHECK(r.floats_at(0, 160) == ramp(160, 0));
  CHECK(r.floats_at(r.plan.tensor(9)->offset, 576) == filled(576, 9.0f));
  const auto s = r.sync();
  CHECK(r.out.answer_of(s).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(s).what, StartsWith(why));
}

// -- failures -------------------------------------------------------------------------------------

TEST_CASE("a collective over an input of a failed lane fails at once naming the device",
          "[planner][collectives]") {
  rig r;
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  r.submit(upload(sim1, 2, {10, 20, 30, 40}));
  emu.run_all();
  std::string lane_why;
  SECTION("the lane reported a failure") {
    r.plan.failed(sim0, 2, "copy: bad launch");
    lane_why = "sim:0: copy: bad launch";
  }
  SECTION("the lane's runner went down") {
    r.plan.lane_down(sim0, "runner of sim:0 stopped: exited with code 3");
    lane_why = "runner of sim:0 stopped: exited with code 3";
  }
  REQUIRE(r.plan.lane(sim0).failed == lane_why);
  REQUIRE(r.plan.tensor(1)->failure == lane_why);

  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4}, {sim1, cpu},
                      4));
  CHECK(r.plan.held() == 0);
  const std::string why = "all_reduce of #1,#2 (2 x 4 elements): input #1 failed: " + lane_why;
  for (ag::operand_id id : {3, 4}) {
    INFO("result #" << id);
    const auto* t = r.plan.tensor(id);
    REQUIRE(t != nullptr);
    CHECK(t->failure == why);
    CHECK_FALSE(t->placed);
  }
  r.drain();
  CHECK(r.plan.lane(sim1).issued == 1); // nothing was placed
  CHECK(r.plan.lane(cpu).issued == 0);
  CHECK(r.plan.store().live_bytes() == 0);
  const auto f = r.fetch(4);
  CHECK(r.out.answer_of(f).code == ag::errc::device_failed);
  CHECK(r.out.answer_of(f).what == why);
  const auto s = r.sync();
  CHECK(r.out.answer_of(s).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(s).what, Contains(lane_why));
}

TEST_CASE("a part lane failing while an all_gather is partly placed taints every result and fills "
          "the rest of the healthy one with NaN",
          "[planner][collectives]") {
  rig r{setup_of(small_store)};
  emulator emu{r};
  two_device_parts(r, emu, 160);
  r.submit(upload(cpu, 9, filled(640, 9.0f))); // two ranges left: two chunks of 64
  r.submit(collective(ag::collective_kind::all_gather, {1, 2}, {sim0, sim1}, {3, 4}, {sim1, sim0},
                      160));
  REQUIRE(r.plan.held() == 1);
  r.drain();
  // sim:0 stages its part's first two chunks and copies them into #4; sim:1's copies into #3
  // wait for the staging.
  REQUIRE(r.out.batches(sim0) == 2);
  CHECK(r.out.runs[sim0].back().ops.size() == 4);
  CHECK(r.out.batches(sim1) == 1);
  CHECK(r.plan.lane(sim1).queue.size() == 2);

  r.plan.failed(sim0, 2, "copy: bad launch");
  emu.dead.insert(sim0);
  const std::string lane_why = "sim:0: copy: bad launch";
  CHECK(r.plan.tensor(4)->failure == lane_why); // on the failed lane
  CHECK(r.plan.tensor(3)->failure == lane_why); // waited for it
  // sim:1's copies became NaN fills of the same pieces, and were sent at once.
  REQUIRE(r.out.batches(sim1) == 2);
  const auto& stand_ins = r.out.runs[sim1].back().ops;
  REQUIRE(stand_ins.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(fields(stand_ins[i])
          == fields(ag::make_op(ag::op_kind::fill, {3, no_offset}, {}, {}, 64, 64 * i, 0, 320)));
    CHECK(std::isnan(stand_ins[i].scalar));
  }
  CHECK(r.plan.held() == 1); // its ranges free once sim:1 ran the stand-ins

  REQUIRE(emu.step(sim1));
  CHECK(r.plan.held() == 0);
  // The rest of #3 is NaN, so that it is whole on its device.
  const auto& rest = r.plan.lane(sim1).queue;
  REQUIRE(rest.size() == 1);
  CHECK(fields(rest.back().op)
        == fields(ag::make_op(ag::op_kind::fill, {3, no_offset}, {}, {}, 192, 128, 0, 320)));
  CHECK(std::isnan(rest.back().op.scalar));
  const auto s = r.sync();
  emu.run_all();
  CHECK(r.plan.lane(sim1).queue.empty());
  CHECK(r.plan.lane(cpu).queue.empty());
  const auto& v = emu.on(sim1, 3);
  CHECK(v.size() == 320);
  CHECK(all_nan(v));
  for (ag::operand_id id : {3, 4})
    CHECK_THAT(r.plan.tensor(id)->failure, Contains(lane_why));
  CHECK(r.out.answer_of(s).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(s).what, Contains(lane_why));
  CHECK(r.plan.pending_frees() == 0);
  CHECK(r.plan.store().live_bytes() == 2560); // #9 alone
}

TEST_CASE("an all_reduce placed whole before a part lane fails taints every result",
          "[planner][collectives]") {
  rig r;
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  r.submit(upload(sim1, 2, {10, 20, 30, 40}));
  emu.run_all();
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4}, {cpu, sim1},
                      4));
  REQUIRE(r.plan.held() == 0);
  r.drain();
  REQUIRE(emu.step(sim1)); // sim:1 staged its part; sim:0 never will
  r.drain();
  CHECK(r.out.batches(cpu) == 0);

  r.plan.failed(sim0, 2, "copy: bad launch");
  emu.dead.insert(sim0);
  const std::string lane_why = "sim:0: copy: bad launch";
  // The sum waited for sim:0: it became a NaN fill of the accumulator, sent at once; so did the
  // copy of the accumulator into the cpu result, which would have read those NaNs.
  REQUIRE(r.out.batches(cpu) == 1);
  const auto& ops = r.out.runs[cpu][0].ops;
  REQUIRE(ops.size() == 2);
  CHECK(ops[0].kind == ag::op_kind::fill);
  CHECK(std::isnan(ops[0].scalar));
  CHECK(ops[0].out.id == 0);
  CHECK(ops[1].kind == ag::op_kind::fill);
  CHECK(std::isnan(ops[1].scalar));
  CHECK(ops[1].out.id == 3);
  emu.run_all();
  CHECK(all_nan(emu.on(sim1, 4)));
  CHECK(all_nan(r.floats_at(r.plan.tensor(3)->offset, 4)));
  // What holds NaN must not read as healthy.
  CHECK_THAT(r.plan.tensor(3)->failure, Contains(lane_why));
  CHECK_THAT(r.plan.tensor(4)->failure, Contains(lane_why));
  const auto f = r.fetch(3);
  CHECK(r.out.answer_of(f).code == ag::errc::device_failed);
  const auto s = r.sync();
  CHECK(r.out.answer_of(s).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(s).what, Contains(lane_why));
  CHECK(r.plan.pending_frees() == 0);
}

// -- credits --------------------------------------------------------------------------------------

TEST_CASE("the credit of a collective comes back once its first result's lane ran its last "
          "operator of it",
          "[planner][collectives]") {
  auto s = setup_of();
  s.flow = lanes_flow();
  auto fc = s.flow;
  rig r{std::move(s)};
  emulator emu{r};
  REQUIRE(fc->acquire(sim0, 16, 0ms).empty());
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  REQUIRE(fc->acquire(sim1, 16, 0ms).empty());
  r.submit(upload(sim1, 2, {10, 20, 30, 40}));
  emu.run_all();
  REQUIRE(fc->stats().ops == std::vector<uint64_t>{0, 0, 0});

  REQUIRE(fc->acquire(sim1, 0, 0ms).empty()); // charged to the first result's lane
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4}, {sim1, sim0},
                      4));
  r.drain();
  CHECK(fc->stats().ops == std::vector<uint64_t>{0, 0, 1});
  REQUIRE(emu.step(sim0)); // staging
  REQUIRE(emu.step(sim1)); // staging
  CHECK(fc->stats().ops == std::vector<uint64_t>{0, 0, 1});
  REQUIRE(emu.step(cpu)); // the sum
  CHECK(fc->stats().ops == std::vector<uint64_t>{0, 0, 1});
  REQUIRE(emu.step(sim0)); // the copy into #4
  CHECK(fc->stats().ops == std::vector<uint64_t>{0, 0, 1});
  REQUIRE(emu.step(sim1)); // the copy into #3: sim:1's last operator of it
  CHECK(fc->stats().ops == std::vector<uint64_t>{0, 0, 0});
  CHECK(emu.on(sim1, 3) == std::vector<float>{11, 22, 33, 44});
}

TEST_CASE("a collective that fails before it starts gives its credit back at once",
          "[planner][collectives]") {
  auto s = setup_of();
  s.flow = lanes_flow();
  auto fc = s.flow;
  rig r{std::move(s)};
  REQUIRE(fc->acquire(sim1, 0, 0ms).empty());
  r.submit(collective(ag::collective_kind::broadcast, {99}, {sim0}, {3, 4}, {sim1, cpu}, 4));
  CHECK(fc->stats().ops == std::vector<uint64_t>{0, 0, 0});
  CHECK(r.plan.tensor(3)->failure
        == "broadcast of #99 (1 x 4 elements to 2 devices): operand #99 does not exist");
  r.drain();
  CHECK(r.out.runs.empty());
}

// -- releases -------------------------------------------------------------------------------------

TEST_CASE("a release of an input of a collective waiting for store room waits until the "
          "collective is placed",
          "[planner][collectives]") {
  rig r{setup_of(small_store)};
  emulator emu{r};
  pressured_all_reduce(r, emu);
  REQUIRE(r.plan.held() == 1);
  r.plan.release(1);
  CHECK(r.plan.held() == 2);
  REQUIRE(r.plan.tensor(1) != nullptr);
  for (const auto& e : r.plan.lane(sim0).queue)
    CHECK_FALSE(e.release);

  emu.run_all();
  CHECK(r.plan.held() == 0);
  CHECK(r.plan.tensor(1) == nullptr);
  CHECK(pieces_from(r, sim0, 1) == "0+64/160 64+64/160 128+32/160");
  // sim:0's release of #1 came after every staging copy that reads it.
  const auto& batches = r.out.runs[sim0];
  std::size_t release_batch = batches.size(), last_read = 0;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    for (const auto& op : batches[i].ops)
      if (op.a.id == 1)
        last_read = i;
    for (auto id : batches[i].no_hold)
      if (id == 1)
        release_batch = i;
  }
  REQUIRE(release_batch < batches.size());
  CHECK(release_batch >= last_read);
  CHECK(emu.released == std::vector<std::pair<uint32_t, ag::operand_id>>{{sim0, 1}});
  CHECK(emu.mem[sim0].count(1) == 0);
  CHECK(emu.on(sim0, 3) == sum_of(ramp(160, 0), ramp(160, 1000)));
}
