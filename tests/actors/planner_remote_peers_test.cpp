// The planner's direct paths between remote peer lanes (children): exports through store slots.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/planner.hpp"
#include "graph/collective.hpp"
#include "graph/export_slot.hpp"
#include "tests/actors/planner_collective_helpers.hpp"

using namespace std::chrono_literals;
using Catch::Contains;
using namespace ag::test;

// -- direct transfers between child processes -----------------------------------------------------

TEST_CASE("a move between two remote peer lanes is a peer_export on the source then a peer_copy "
          "through its slot on the destination after the export",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1})};
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  emu.run_all();
  REQUIRE(r.plan.store().live_bytes() == 0);
  REQUIRE(r.out.batches(sim0) == 0); // a child's batches go out in broadcasts
  REQUIRE(r.out.broadcasts.size() == 1);

  r.submit(move_to(sim1, 2, 1, 4));
  CHECK(r.plan.held() == 0);
  CHECK(r.plan.store().live_bytes() == range); // the export slot
  const auto* src = r.plan.tensor(1);
  REQUIRE(src != nullptr);
  const uint64_t slot = src->export_slot;
  REQUIRE(slot != no_offset);
  CHECK(dep_str(src->exported) == "1:2"); // operator 2 of sim:0, after the upload's copy
  const auto& q0 = r.plan.lane(sim0).queue;
  const auto& q1 = r.plan.lane(sim1).queue;
  REQUIRE(q0.size() == 1);
  CHECK(fields(q0[0].op) == export_fields(slot, 1, 4));
  CHECK(q0[0].deps.empty());
  REQUIRE(q1.size() == 1);
  CHECK(fields(q1[0].op) == imported_copy_fields(2, 1, 4, sim0, slot));
  CHECK(deps_str(q1[0].deps) == "1:2"); // the export, not the writer (1:1)
  CHECK(deps_str(r.plan.tensor(1)->readers) == "2:1");
  const auto* t = r.plan.tensor(2);
  REQUIRE(t != nullptr);
  CHECK(t->lane == sim1);
  CHECK(t->bytes == 16);
  CHECK(dep_str(t->writer) == "2:1");
  CHECK(t->export_slot == no_offset); // nobody reads it from another lane yet

  REQUIRE(q1[0].deps.size() == 1);
  CHECK(q1[0].deps[0].sent); // the export sent, not run: no acknowledgement between them

  // The export and the copy go out in one broadcast: the copy's runner waits for the slot, its
  // stream for the exporter's event.
  r.drain();
  REQUIRE(r.out.broadcasts.size() == 2);
  REQUIRE(r.out.broadcasts[1].batches.size() == 2);
  CHECK(r.out.broadcasts[1].batches[0].lane == sim0);
  const auto sent = last_broadcast_ops(r, sim1);
  REQUIRE(sent.size() == 1);
  CHECK(fields(sent[0]) == imported_copy_fields(2, 1, 4, sim0, slot));
  CHECK(ag::export_slots::load(r.store.data() + slot) == ag::export_state::pending);
  CHECK_FALSE(emu.step(sim1)); // its copy waits for the export
  REQUIRE(emu.step(sim0));
  ag::export_slot x;
  std::memcpy(&x, r.store.data() + slot, sizeof x);
  CHECK(x.state == static_cast<uint32_t>(ag::export_state::ready));
  CHECK(x.lane == sim0);
  CHECK(x.pid != 0);
  CHECK(x.bytes == 16);

  emu.run_all();
  CHECK(emu.on(sim1, 2) == std::vector<float>{1, 2, 3, 4});
  CHECK(emu.imports == std::vector<std::pair<uint32_t, ag::operand_id>>{{sim1, 1}});
  CHECK(r.out.runs.empty()); // nothing ran in this process
  CHECK(r.plan.store().live_bytes() == range); // the slot serves while #1 lives
  CHECK(r.plan.pending_frees() == 0);
  all_queues_empty(r);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("later moves of an exported remote operand reuse its export",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1})};
  emulator emu{r};
  r.submit(upload(sim0, 1, ramp(6, 10)));
  emu.run_all();
  // Two moves before anything ran, and one after.
  r.submit(move_to(sim1, 2, 1, 6));
  r.submit(move_to(sim1, 3, 1, 6));
  const uint64_t slot = r.plan.tensor(1)->export_slot;
  REQUIRE(slot != no_offset);
  CHECK(r.plan.store().live_bytes() == range);
  const auto& q1 = r.plan.lane(sim1).queue;
  REQUIRE(q1.size() == 2);
  CHECK(fields(q1[0].op) == imported_copy_fields(2, 1, 6, sim0, slot));
  CHECK(fields(q1[1].op) == imported_copy_fields(3, 1, 6, sim0, slot));
  CHECK(deps_str(q1[0].deps) == "1:2");
  CHECK(deps_str(q1[1].deps) == "1:2");
  CHECK(r.plan.lane(sim0).queue.size() == 1); // one export
  emu.run_all();
  r.submit(move_to(sim1, 4, 1, 6));
  CHECK(r.plan.tensor(1)->export_slot == slot);
  CHECK(r.plan.store().live_bytes() == range);
  CHECK(r.plan.lane(sim0).queue.empty());
  REQUIRE(r.plan.lane(sim1).queue.size() == 1);
  CHECK(fields(r.plan.lane(sim1).queue[0].op) == imported_copy_fields(4, 1, 6, sim0, slot));
  emu.run_all();
  CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == 1);
  CHECK(emu.exports.size() == 1);
  for (ag::operand_id id : {2, 3, 4})
    CHECK(emu.on(sim1, id) == ramp(6, 10));
  CHECK(emu.imports.size() == 3);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("the export slot of a remote operand is freed once it is released and its readers "
          "acknowledged",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1})};
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  emu.run_all();
  r.submit(move_to(sim1, 2, 1, 4));
  r.drain();
  REQUIRE(emu.step(sim0)); // the export ran
  r.drain();
  REQUIRE(last_broadcast_ops(r, sim1).size() == 1); // the copy is sent, not run
  CHECK(r.plan.store().live_bytes() == range);

  r.plan.release(1);
  CHECK(r.plan.tensor(1) == nullptr);
  CHECK(r.plan.store().live_bytes() == range); // its copy may still read the slot
  CHECK(r.plan.pending_frees() == 1);
  const auto& q0 = r.plan.lane(sim0).queue;
  REQUIRE(q0.size() == 1);
  CHECK(q0[0].release);
  CHECK(deps_str(q0[0].deps) == "2:1");
  r.drain();
  CHECK(emu.unrun(sim0) == 0); // the release waits for the copy
  CHECK(emu.released.empty());

  REQUIRE(emu.step(sim1)); // the copy acknowledged
  CHECK(r.plan.store().live_bytes() == 0);
  CHECK(r.plan.pending_frees() == 0);
  emu.run_all();
  CHECK(emu.released == std::vector<std::pair<uint32_t, ag::operand_id>>{{sim0, 1}});
  CHECK(emu.on(sim1, 2) == std::vector<float>{1, 2, 3, 4});
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a one-shot all_reduce between two remote peers exports both parts and its group "
          "entries carry their slots",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1})};
  emulator emu{r};
  const auto parts = peer_parts(r, emu, {sim0, sim1}, 5);
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {11, 12},
                      {sim0, sim1}, 5));
  CHECK(r.plan.held() == 0);
  CHECK(r.plan.store().live_bytes() == 3 * range); // two slots and the group
  const uint64_t slot1 = r.plan.tensor(1)->export_slot;
  const uint64_t slot2 = r.plan.tensor(2)->export_slot;
  REQUIRE(slot1 != no_offset);
  REQUIRE(slot2 != no_offset);
  CHECK(slot1 != slot2);
  CHECK(dep_str(r.plan.tensor(1)->exported) == "1:2");
  CHECK(dep_str(r.plan.tensor(2)->exported) == "2:2");
  const auto& q0 = r.plan.lane(sim0).queue;
  const auto& q1 = r.plan.lane(sim1).queue;
  REQUIRE(q0.size() == 2);
  REQUIRE(q1.size() == 2);
  CHECK(fields(q0[0].op) == export_fields(slot1, 1, 5));
  CHECK(fields(q1[0].op) == export_fields(slot2, 2, 5));
  const uint64_t group = q0[1].op.a.offset;
  CHECK(fields(q0[1].op) == peer_sum_fields(11, group, 5, 0, 2));
  CHECK(fields(q1[1].op) == peer_sum_fields(12, group, 5, 0, 2));
  CHECK(deps_str(q0[1].deps) == "2:2"); // the other part's export
  CHECK(deps_str(q1[1].deps) == "1:2");
  CHECK(group != slot1);
  CHECK(group != slot2);
  CHECK(group_slots_at(r, group, 2)
        == "1:#1@" + std::to_string(slot1) + " 2:#2@" + std::to_string(slot2));

  emu.run_all();
  const auto want = sum_all(parts);
  CHECK(emu.on(sim0, 11) == want);
  CHECK(emu.on(sim1, 12) == want);
  auto imports = emu.imports;
  std::sort(imports.begin(), imports.end());
  CHECK(imports == std::vector<std::pair<uint32_t, ag::operand_id>>{{sim0, 2}, {sim1, 1}});
  CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == 2);
  CHECK(r.plan.store().live_bytes() == 2 * range); // the group went; the slots serve the parts
  r.plan.release(1);
  r.plan.release(2);
  emu.run_all();
  CHECK(r.plan.store().live_bytes() == 0);
  CHECK(r.plan.pending_frees() == 0);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a two-shot all_reduce between two remote peers exports each block after its sum and "
          "the gathers read the blocks through their slots",
          "[planner][peers]") {
  auto setup = remote_peers({sim0, sim1});
  setup.one_shot_bytes = 4; // anything longer than one element is two-shot
  rig r{std::move(setup)};
  emulator emu{r};
  const uint64_t count = 7; // blocks of 4 (on sim:0) and 3 (on sim:1)
  const auto parts = peer_parts(r, emu, {sim0, sim1}, count);
  REQUIRE_NOTHROW(r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1},
                                      {11, 12}, {sim0, sim1}, count)));
  CHECK(r.plan.held() == 0);
  CHECK(r.plan.store().live_bytes() == 5 * range); // the parts' slots, the blocks', the group
  const uint64_t slot1 = r.plan.tensor(1)->export_slot;
  const uint64_t slot2 = r.plan.tensor(2)->export_slot;
  REQUIRE(slot1 != no_offset);
  REQUIRE(slot2 != no_offset);
  const auto& q0 = r.plan.lane(sim0).queue;
  const auto& q1 = r.plan.lane(sim1).queue;
  // Each lane: the part's export (2), the block's sum (3), the block's export (4), the gathers
  // of block 0 (5) and block 1 (6), the block's release.
  REQUIRE(q0.size() == 6);
  REQUIRE(q1.size() == 6);
  CHECK(fields(q0[0].op) == export_fields(slot1, 1, count));
  CHECK(fields(q1[0].op) == export_fields(slot2, 2, count));
  REQUIRE(q0[1].op.kind == ag::op_kind::peer_sum);
  REQUIRE(q1[1].op.kind == ag::op_kind::peer_sum);
  const uint64_t group = q0[1].op.a.offset;
  const ag::operand_id b0 = q0[1].op.out.id;
  const ag::operand_id b1 = q1[1].op.out.id;
  CHECK(b0 >= own_ids);
  CHECK(b1 >= own_ids);
  CHECK(b0 != b1);
  CHECK(fields(q0[1].op) == peer_sum_fields(b0, group, 4, 0, 2));
  CHECK(fields(q1[1].op) == peer_sum_fields(b1, group, 3, 4, 2));
  CHECK(deps_str(q0[1].deps) == "2:2");
  CHECK(deps_str(q1[1].deps) == "1:2");
  CHECK(group_slots_at(r, group, 2)
        == "1:#1@" + std::to_string(slot1) + " 2:#2@" + std::to_string(slot2));
  // The blocks' exports, each after its sum on its own lane.
  REQUIRE(q0[2].op.kind == ag::op_kind::peer_export);
  REQUIRE(q1[2].op.kind == ag::op_kind::peer_export);
  const uint64_t bslot0 = q0[2].op.out.offset;
  const uint64_t bslot1 = q1[2].op.out.offset;
  CHECK(fields(q0[2].op) == export_fields(bslot0, b0, 4));
  CHECK(fields(q1[2].op) == export_fields(bslot1, b1, 3));
  CHECK(std::set<uint64_t>{slot1, slot2, bslot0, bslot1, group}.size() == 5);
  // The gathers: in place on the block's own lane, through the block's slot on the other, after
  // that block's export (operator 4 of its lane).
  CHECK(fields(q0[3].op) == peer_copy_fields(11, b0, 4, sim0, 0, count));
  CHECK(q0[3].deps.empty());
  CHECK(fields(q0[4].op) == imported_copy_fields(11, b1, 3, sim1, bslot1, 4, count));
  CHECK(deps_str(q0[4].deps) == "2:4");
  CHECK(fields(q1[3].op) == imported_copy_fields(12, b0, 4, sim0, bslot0, 0, count));
  CHECK(deps_str(q1[3].deps) == "1:4");
  CHECK(fields(q1[4].op) == peer_copy_fields(12, b1, 3, sim1, 4, count));
  CHECK(q1[4].deps.empty());
  // The releases of the blocks, after the other lane's gather of them.
  REQUIRE(q0[5].release);
  CHECK(q0[5].released == b0);
  CHECK(deps_str(q0[5].deps) == "2:5");
  REQUIRE(q1[5].release);
  CHECK(q1[5].released == b1);
  CHECK(deps_str(q1[5].deps) == "1:6");

  emu.run_all();
  const auto want = sum_all(parts);
  CHECK(emu.on(sim0, 11) == want);
  CHECK(emu.on(sim1, 12) == want);
  CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == 4);
  auto imports = emu.imports;
  std::sort(imports.begin(), imports.end());
  CHECK(imports
        == std::vector<std::pair<uint32_t, ag::operand_id>>{{sim0, 2}, {sim0, b1}, {sim1, 1},
                                                            {sim1, b0}});
  for (uint32_t l : {sim0, sim1})
    for (auto id : {b0, b1})
      CHECK(emu.mem[l].count(id) == 0);
  CHECK(r.plan.store().live_bytes() == 2 * range); // the parts' slots alone
  CHECK(r.plan.pending_frees() == 0);
  all_queues_empty(r);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("reduce_scatter all_gather and broadcast between remote peers read every other child's "
          "part through its export",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1, sim2}, 64 << 10, 4)};
  emulator emu{r};
  const std::vector<uint32_t> lanes{sim0, sim1, sim2};
  SECTION("reduce_scatter") {
    const auto parts = peer_parts(r, emu, lanes, 6);
    r.submit(collective(ag::collective_kind::reduce_scatter, {1, 2, 3}, lanes, {11, 12, 13},
                        lanes, 6));
    CHECK(r.plan.store().live_bytes() == 4 * range); // three slots and the group
    emu.run_all();
    const auto sum = sum_all(parts);
    for (uint64_t i = 0; i < 3; ++i)
      CHECK(emu.on(lanes[i], 11 + i) == slice(sum, 2 * i, 2));
    CHECK(emu.imports.size() == 6); // each lane, the two other parts
    CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == 3);
  }
  SECTION("all_gather") {
    const auto parts = peer_parts(r, emu, lanes, 4);
    r.submit(collective(ag::collective_kind::all_gather, {1, 2, 3}, lanes, {11, 12, 13}, lanes,
                        4));
    CHECK(r.plan.store().live_bytes() == 3 * range); // the slots: no group
    for (uint64_t i = 0; i < 3; ++i) {
      INFO("lane " << lanes[i]);
      const auto& q = r.plan.lane(lanes[i]).queue;
      std::vector<const ag::entry*> copies;
      for (const auto& e : q)
        if (e.op.kind == ag::op_kind::peer_copy)
          copies.push_back(&e);
      REQUIRE(copies.size() == 3);
      for (uint64_t p = 0; p < 3; ++p) {
        const uint64_t slot = r.plan.tensor(p + 1)->export_slot;
        if (lanes[p] == lanes[i])
          CHECK(fields(copies[p]->op) == peer_copy_fields(11 + i, p + 1, 4, lanes[p], 4 * p, 12));
        else
          CHECK(fields(copies[p]->op)
                == imported_copy_fields(11 + i, p + 1, 4, lanes[p], slot, 4 * p, 12));
      }
    }
    emu.run_all();
    for (uint64_t i = 0; i < 3; ++i)
      CHECK(emu.on(lanes[i], 11 + i) == concat(parts));
    CHECK(emu.imports.size() == 6);
    CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == 3);
  }
  SECTION("broadcast") {
    r.submit(upload(sim0, 1, ramp(6, 7)));
    emu.run_all();
    r.submit(collective(ag::collective_kind::broadcast, {1}, {sim0}, {11, 12}, {sim1, sim2}, 6));
    const uint64_t slot = r.plan.tensor(1)->export_slot;
    REQUIRE(slot != no_offset);
    for (uint32_t l : {sim1, sim2}) {
      INFO("lane " << l);
      const auto& q = r.plan.lane(l).queue;
      REQUIRE(q.size() == 1);
      CHECK(fields(q[0].op) == imported_copy_fields(l == sim1 ? 11 : 12, 1, 6, sim0, slot));
      CHECK(deps_str(q[0].deps) == "1:2");
    }
    emu.run_all();
    CHECK(emu.on(sim1, 11) == ramp(6, 7));
    CHECK(emu.on(sim2, 12) == ramp(6, 7));
    CHECK(emu.imports.size() == 2);
    CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == 1);
  }
  CHECK(r.out.runs.empty());
  all_queues_empty(r);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a move between remote peers with no store room for the export slot waits held and goes "
          "once room comes",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1}, 2 * range)};
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  emu.run_all();
  r.submit(upload(cpu, 9, {9, 9})); // kept: one range
  r.submit(upload(sim1, 5, {5}));   // its staging range, until sim:1 acknowledges
  r.drain();
  REQUIRE(r.plan.store().live_bytes() == 2 * range);

  r.submit(move_to(sim1, 2, 1, 4));
  CHECK(r.plan.held() == 1);
  CHECK(r.plan.tensor(2) == nullptr);
  CHECK(r.plan.tensor(1)->export_slot == no_offset);
  CHECK(r.plan.lane(sim0).queue.empty());
  CHECK(r.plan.lane(sim1).queue.empty());
  r.drain();
  CHECK(emu.unrun(sim0) == 0);

  REQUIRE(emu.step(sim1)); // the staging range is free again
  CHECK(r.plan.held() == 0);
  const uint64_t slot = r.plan.tensor(1)->export_slot;
  REQUIRE(slot != no_offset);
  REQUIRE(r.plan.lane(sim0).queue.size() == 1);
  CHECK(fields(r.plan.lane(sim0).queue[0].op) == export_fields(slot, 1, 4));
  REQUIRE(r.plan.lane(sim1).queue.size() == 1);
  CHECK(fields(r.plan.lane(sim1).queue[0].op) == imported_copy_fields(2, 1, 4, sim0, slot));
  emu.run_all();
  CHECK(emu.on(sim1, 2) == std::vector<float>{1, 2, 3, 4});
  CHECK(r.plan.tensor(2)->failure.empty());
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("an all_reduce between remote peers with store room for one of its two export slots "
          "takes none and waits held until room for all comes",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1}, 5 * range)};
  emulator emu{r};
  const auto parts = peer_parts(r, emu, {sim0, sim1}, 4);
  r.submit(upload(cpu, 9, {9}));                  // kept: one range
  r.submit(upload(cpu, 8, {8}));                  // and another
  r.submit(upload(sim0, 5, filled(128, 5.0f)));   // two staging ranges, until sim:0 acknowledges
  r.drain();
  REQUIRE(r.plan.store().live_bytes() == 4 * range); // room for one slot

  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {11, 12},
                      {sim0, sim1}, 4));
  CHECK(r.plan.held() == 1);
  CHECK(r.plan.store().live_bytes() == 4 * range); // no slot taken
  CHECK(r.plan.tensor(1)->export_slot == no_offset);
  CHECK(r.plan.tensor(2)->export_slot == no_offset);
  CHECK(r.plan.tensor(11) == nullptr);
  CHECK(r.plan.lane(sim0).queue.empty());
  CHECK(r.plan.lane(sim1).queue.empty());

  REQUIRE(emu.step(sim0)); // the staging ranges are free: two slots and the group fit
  CHECK(r.plan.held() == 0);
  CHECK(r.plan.store().live_bytes() == 5 * range);
  emu.run_all();
  const auto want = sum_all(parts);
  CHECK(emu.on(sim0, 11) == want);
  CHECK(emu.on(sim1, 12) == want);
  CHECK(r.plan.tensor(11)->failure.empty());
  CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == 2);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a remote lane failing taints what another child read of it unacknowledged and makes "
          "every other remote peer forget its exports",
          "[planner][peers]") {
  // sim:0, sim:1 and sim:2 are peers; sim:3 (lane 4) is no peer.
  rig r{remote_peers({sim0, sim1, sim2}, 64 << 10, 5)};
  emulator emu{r};
  constexpr uint32_t sim3 = 4;
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  r.submit(upload(sim0, 5, {50, 60, 70, 80}));
  r.submit(upload(sim3, 7, {7}));
  emu.run_all();
  r.submit(move_to(sim1, 2, 1, 4)); // read and acknowledged before the failure
  emu.run_all();
  REQUIRE(emu.on(sim1, 2) == std::vector<float>{1, 2, 3, 4});

  r.submit(move_to(sim2, 3, 1, 4)); // #1 is exported already
  r.submit(move_to(sim1, 4, 5, 4)); // goes out with #5's export
  const uint64_t slot5 = r.plan.tensor(5)->export_slot;
  r.drain();
  const auto sent2 = last_broadcast_ops(r, sim2);
  REQUIRE(sent2.size() == 1);
  CHECK(fields(sent2[0])
        == imported_copy_fields(3, 1, 4, sim0, r.plan.tensor(1)->export_slot));
  const auto sent1 = last_broadcast_ops(r, sim1);
  REQUIRE(sent1.size() == 1);
  CHECK(fields(sent1[0]) == imported_copy_fields(4, 5, 4, sim0, slot5));
  CHECK(r.plan.lane(sim1).queue.empty());
  CHECK_FALSE(emu.step(sim1)); // its copy waits for #5's export, which sim:0 never writes
  const uint64_t sim1_issued = r.plan.lane(sim1).issued;
  const uint64_t sim2_issued = r.plan.lane(sim2).issued;
  const uint64_t sim3_issued = r.plan.lane(sim3).issued;
  const auto before = r.sync();

  // sim:0 fails before sim:2 acknowledged its copy and before it wrote #5's export, which sim:1
  // waits for: both slots read as gone, so that neither reader maps sim:0's memory now.
  r.plan.failed(sim0, 3, "peer_export: out of memory");
  emu.dead.insert(sim0);
  const std::string why = "sim:0: peer_export: out of memory";
  CHECK(r.out.kills == std::vector<uint32_t>{sim0});
  CHECK(ag::export_slots::load(r.store.data() + slot5) == ag::export_state::gone);
  CHECK(ag::export_slots::load(r.store.data() + r.plan.tensor(1)->export_slot)
        == ag::export_state::gone);
  CHECK(r.plan.tensor(2)->failure.empty()); // acknowledged before: healthy
  CHECK_THAT(r.plan.tensor(3)->failure, Contains("sim:0")); // sent, unacknowledged
  CHECK(r.plan.tensor(3)->failure == why);
  CHECK(r.plan.tensor(4)->failure == why); // sent, its export gone
  CHECK(r.plan.tensor(7)->failure.empty());
  // Each other remote peer forgets sim:0's exports, after what it was sent; sim:3 is no peer.
  CHECK(r.plan.lane(sim1).issued == sim1_issued + 1);
  CHECK(r.plan.lane(sim2).issued == sim2_issued + 1);
  CHECK(r.plan.lane(sim3).issued == sim3_issued);
  const auto after1 = last_broadcast_ops(r, sim1);
  const auto after2 = last_broadcast_ops(r, sim2);
  REQUIRE(after1.size() == 1);
  CHECK(fields(after1[0]) == forget_fields(sim0));
  REQUIRE(after2.size() == 1);
  CHECK(fields(after2[0]) == forget_fields(sim0));
  CHECK(last_broadcast_ops(r, sim3).empty());

  emu.run_all();
  CHECK(all_nan(emu.on(sim1, 4)));
  CHECK(all_nan(emu.on(sim2, 3)));
  CHECK(emu.lost_imports
        == std::vector<std::pair<uint32_t, ag::operand_id>>{{sim1, 5}, {sim2, 1}});
  CHECK(emu.forgotten[sim1] == std::set<uint32_t>{sim0});
  CHECK(emu.forgotten[sim2] == std::set<uint32_t>{sim0});
  CHECK(emu.forgotten[sim3].empty());
  CHECK(count_kind(emu.ops_sent(sim3), ag::op_kind::peer_forget) == 0);
  REQUIRE(r.out.was_answered(before));
  CHECK(r.out.answer_of(before).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(before).what, Contains(why));

  // A read of the tainted copy names the failed device; one of the healthy copy does not fail.
  r.submit(move_to(cpu, 6, 3, 4));
  const auto bad = r.fetch(6);
  REQUIRE(r.out.was_answered(bad));
  CHECK(r.out.answer_of(bad).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(bad).what, Contains(why));
  r.submit(move_to(cpu, 8, 2, 4));
  emu.run_all();
  const auto good = r.fetch(8);
  REQUIRE(r.out.was_answered(good));
  REQUIRE_FALSE(r.out.answer_of(good).code);
  CHECK(r.floats_at(r.out.answer_of(good).offset, 4) == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("in thread mode the same peers read each other's exports, in batches run in this "
          "process, and a failure sends no peer_forget",
          "[planner][peers]") {
  auto setup = with_peers(setup_of(64 << 10, false), {sim0, sim1});
  uint64_t count = 5;
  SECTION("one-shot") {}
  SECTION("two-shot") {
    setup.one_shot_bytes = 4;
    count = 7;
  }
  rig r{std::move(setup)};
  emulator emu{r};
  const auto parts = peer_parts(r, emu, {sim0, sim1}, count);
  r.submit(move_to(sim1, 3, 1, count));
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {11, 12},
                      {sim0, sim1}, count));
  const uint64_t slot1 = r.plan.tensor(1)->export_slot;
  const uint64_t slot2 = r.plan.tensor(2)->export_slot;
  REQUIRE(slot1 != no_offset);
  REQUIRE(slot2 != no_offset);
  const auto& q0 = r.plan.lane(sim0).queue;
  REQUIRE(q0.size() >= 2);
  CHECK(fields(q0[0].op) == export_fields(slot1, 1, count));
  const auto& sum = q0[1].op;
  REQUIRE(sum.kind == ag::op_kind::peer_sum);
  CHECK(group_slots_at(r, sum.a.offset, 2)
        == "1:#1@" + std::to_string(slot1) + " 2:#2@" + std::to_string(slot2));
  REQUIRE_FALSE(r.plan.lane(sim1).queue.empty());
  CHECK(fields(r.plan.lane(sim1).queue.front().op)
        == imported_copy_fields(3, 1, count, sim0, slot1));
  emu.run_all();
  const auto want = sum_all(parts);
  CHECK(emu.on(sim0, 11) == want);
  CHECK(emu.on(sim1, 12) == want);
  CHECK(emu.on(sim1, 3) == parts[0]);
  CHECK(r.out.broadcasts.empty()); // every batch ran in this process
  CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == (count == 5 ? 2u : 4u));
  CHECK_FALSE(emu.imports.empty());

  r.plan.failed(sim0, 1, "relu: bad launch");
  emu.dead.insert(sim0);
  r.drain();
  emu.run_all();
  CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_forget) == 0);
  CHECK(r.plan.lane(sim1).queue.empty());
  CHECK(r.out.kills.empty());
}

TEST_CASE("an all_reduce between remote peers whose slots fit but whose group does not waits held "
          "and leaks no slot",
          "[planner][peers]") {
  std::size_t ranges = 0;
  auto setup = remote_peers({sim0, sim1});
  SECTION("one-shot") {
    ranges = 5; // the cpu tensor and the staging leave two: the slots, not the group
  }
  SECTION("two-shot") {
    ranges = 7; // they leave four: the four slots, not the group
    setup.one_shot_bytes = 4;
  }
  setup.store_size = ranges * range;
  rig r{std::move(setup)};
  emulator emu{r};
  const auto parts = peer_parts(r, emu, {sim0, sim1}, 6);
  r.submit(upload(cpu, 9, {9}));
  r.submit(upload(sim0, 5, filled(128, 5.0f))); // two staging ranges, until sim:0 acknowledges
  r.drain();
  REQUIRE(r.plan.store().live_bytes() == 3 * range);

  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {11, 12},
                      {sim0, sim1}, 6));
  CHECK(r.plan.held() == 1);
  CHECK(r.plan.tensor(11) == nullptr);
  for (uint32_t l : {sim0, sim1})
    for (const auto& e : r.plan.lane(l).queue)
      CHECK(e.op.kind == ag::op_kind::peer_export); // nothing of the collective but exports

  REQUIRE(emu.step(sim0)); // room for the group
  CHECK(r.plan.held() == 0);
  emu.run_all();
  const auto want = sum_all(parts);
  CHECK(emu.on(sim0, 11) == want);
  CHECK(emu.on(sim1, 12) == want);
  CHECK(r.plan.tensor(11)->failure.empty());
  CHECK(r.plan.tensor(12)->failure.empty());
  CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == (ranges == 7 ? 4 : 2));
  for (ag::operand_id id : {1, 2, 5, 11, 12})
    r.plan.release(id);
  emu.run_all();
  CHECK(r.plan.store().live_bytes() == range); // the cpu tensor alone
  CHECK(r.plan.pending_frees() == 0);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a two-shot all_reduce between remote peers with fewer blocks than parts frees the slot "
          "no block took",
          "[planner][peers]") {
  auto setup = remote_peers({sim0, sim1, sim2}, 64 << 10, 4);
  setup.one_shot_bytes = 4;
  rig r{std::move(setup)};
  emulator emu{r};
  const std::vector<uint32_t> lanes{sim0, sim1, sim2};
  const auto parts = peer_parts(r, emu, lanes, 2); // blocks of 1: sim:2 sums none
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2, 3}, lanes, {11, 12, 13}, lanes, 2));
  CHECK(r.plan.held() == 0);
  CHECK(r.plan.store().live_bytes() == 6 * range); // three part slots, two block slots, the group
  CHECK(count_kind([&] {
          std::vector<ag::op_desc> v;
          for (const auto& e : r.plan.lane(sim2).queue)
            v.push_back(e.op);
          return v;
        }(),
                   ag::op_kind::peer_export)
        == 1); // its part's alone
  emu.run_all();
  const auto want = sum_all(parts);
  for (uint64_t i = 0; i < 3; ++i)
    CHECK(emu.on(lanes[i], 11 + i) == want);
  CHECK(kind_sent(emu, r.lanes, ag::op_kind::peer_export) == 5);
  CHECK(r.plan.store().live_bytes() == 3 * range); // the parts' slots
  CHECK(r.plan.pending_frees() == 0);
  all_queues_empty(r);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a remote operand made by a peer_copy is exported after that copy for a move back",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1})};
  emulator emu{r};
  r.submit(upload(sim0, 1, ramp(3, 1)));
  emu.run_all();
  r.submit(move_to(sim1, 2, 1, 3));
  r.submit(move_to(sim0, 3, 2, 3)); // before anything ran
  const uint64_t slot1 = r.plan.tensor(1)->export_slot;
  const uint64_t slot2 = r.plan.tensor(2)->export_slot;
  REQUIRE(slot1 != no_offset);
  REQUIRE(slot2 != no_offset);
  CHECK(slot1 != slot2);
  const auto& q0 = r.plan.lane(sim0).queue;
  const auto& q1 = r.plan.lane(sim1).queue;
  REQUIRE(q0.size() == 2);
  REQUIRE(q1.size() == 2);
  CHECK(fields(q0[0].op) == export_fields(slot1, 1, 3));
  CHECK(fields(q1[0].op) == imported_copy_fields(2, 1, 3, sim0, slot1));
  CHECK(deps_str(q1[0].deps) == "1:2");
  CHECK(fields(q1[1].op) == export_fields(slot2, 2, 3)); // after the copy that makes #2
  CHECK(dep_str(r.plan.tensor(2)->exported) == "2:2");
  CHECK(fields(q0[1].op) == imported_copy_fields(3, 2, 3, sim1, slot2));
  CHECK(deps_str(q0[1].deps) == "2:2");
  emu.run_all();
  CHECK(emu.on(sim0, 3) == ramp(3, 1));
  CHECK(r.plan.store().live_bytes() == 2 * range);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a remote lane failing while another child's peer_sum over its part is sent taints that "
          "sum unless it was acknowledged",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1})};
  emulator emu{r};
  two_device_parts(r, emu, 4);
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {11, 12},
                      {sim0, sim1}, 4));
  r.drain();
  // Each lane was sent its export and its sum at once. sim:0 writes its export, then its sum
  // waits for sim:1's.
  REQUIRE(emu.step(sim0));
  CHECK_FALSE(emu.step(sim0));
  REQUIRE(emu.unrun(sim1) == 1);
  const auto sent1 = emu.ops_sent(sim1);
  REQUIRE_FALSE(sent1.empty());
  REQUIRE(sent1.back().kind == ag::op_kind::peer_sum); // sent, not run: it reads sim:0's part
  bool acknowledged = false;
  SECTION("not acknowledged") {}
  SECTION("acknowledged") {
    REQUIRE(emu.step(sim1));
    REQUIRE(emu.unrun(sim1) == 0);
    acknowledged = true;
  }
  const uint64_t issued = r.plan.lane(sim1).issued;
  r.plan.failed(sim0, 3, "peer_sum: bad launch");
  emu.dead.insert(sim0);
  const std::string why = "sim:0: peer_sum: bad launch";
  CHECK(r.plan.tensor(11)->failure == why); // on the failed lane
  if (acknowledged)
    CHECK(r.plan.tensor(12)->failure.empty());
  else
    CHECK(r.plan.tensor(12)->failure == why);
  REQUIRE(r.plan.lane(sim1).issued == issued + 1);
  const auto after = last_broadcast_ops(r, sim1);
  REQUIRE(after.size() == 1);
  CHECK(fields(after[0]) == forget_fields(sim0));
  emu.run_all();
  if (acknowledged) // it ran before the failure
    CHECK(emu.on(sim1, 12) == sum_of(ramp(4, 0), ramp(4, 1000)));
  else // it reads sim:0's part as gone
    CHECK(all_nan(emu.on(sim1, 12)));
  CHECK(emu.forgotten[sim1] == std::set<uint32_t>{sim0});
  all_queues_empty(r);
}

TEST_CASE("a node lane's read of a store range its own lane wrote waits for that write's "
          "acknowledgement",
          "[planner][collectives]") {
  auto s = setup_of(64 << 10, true, 3);
  s.devices[sim0] = ag::device::sim(0).on("n1"); // its store is the node's, not the controller's
  rig r{s};
  auto on_node = [&](ag::op_request req) {
    req.where = s.devices[sim0];
    return req;
  };
  r.submit(on_node(upload(sim0, 1, {1, 2, 3, 4})));
  r.submit(move_to(cpu, 2, 1, 4)); // n1/sim:0 writes a store range (Data-out, then Done)
  r.submit(on_node(move_to(sim0, 3, 2, 4))); // and reads it back once the controller has it
  const auto& q = r.plan.lane(sim0).queue;
  REQUIRE(q.size() == 3);
  REQUIRE(q.back().deps.size() == 1);
  CHECK(q.back().deps.front().lane == sim0);
  CHECK(q.back().deps.front().index == 2);
  // The same on a lane of this machine needs no wait: the store is shared.
  rig local{setup_of(64 << 10, true, 3)};
  local.submit(upload(sim0, 1, {1, 2, 3, 4}));
  local.submit(move_to(cpu, 2, 1, 4));
  local.submit(move_to(sim0, 3, 2, 4));
  CHECK(local.plan.lane(sim0).queue.back().deps.empty());
}

TEST_CASE("a direct read on a lane before its exporter's goes out in one more broadcast of the "
          "same dispatch",
          "[planner][peers]") {
  rig r{remote_peers({sim0, sim1})};
  emulator emu{r};
  r.submit(upload(sim1, 1, {5, 6, 7}));
  emu.run_all();
  const std::size_t before = r.out.broadcasts.size();
  r.submit(move_to(sim0, 2, 1, 3)); // sim:0 (lane 1) reads sim:1's (lane 2) operand
  const uint64_t slot = r.plan.tensor(1)->export_slot;
  r.drain();
  // sim:1's export, then sim:0's copy: nothing waits for an acknowledgement between them.
  REQUIRE(r.out.broadcasts.size() == before + 2);
  REQUIRE(r.out.broadcasts[before].batches.size() == 1);
  CHECK(r.out.broadcasts[before].batches[0].lane == sim1);
  CHECK(fields(r.out.broadcasts[before].batches[0].ops.at(0)) == export_fields(slot, 1, 3));
  REQUIRE(r.out.broadcasts[before + 1].batches.size() == 1);
  CHECK(r.out.broadcasts[before + 1].batches[0].lane == sim0);
  CHECK(fields(r.out.broadcasts[before + 1].batches[0].ops.at(0))
        == imported_copy_fields(2, 1, 3, sim1, slot));
  CHECK_FALSE(emu.step(sim0)); // it waits for the export
  emu.run_all();
  CHECK(emu.on(sim0, 2) == std::vector<float>{5, 6, 7});
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("the watchdog spares a child waiting for an export that has not run, and fails the "
          "exporter that read nothing",
          "[planner][peers]") {
  auto s = remote_peers({sim0, sim1});
  s.progress_timeout = 0ms;
  rig r{std::move(s)};
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2}));
  emu.run_all();
  r.submit(move_to(sim1, 2, 1, 2));
  const uint64_t slot = r.plan.tensor(1)->export_slot;
  r.drain();
  REQUIRE(last_broadcast_ops(r, sim1).size() == 1); // the copy, sent with the export
  // Neither child read the broadcast. sim:1's runner may be waiting in its copy for sim:0's
  // export: only sim:0 is failed.
  r.plan.check_progress();
  CHECK_THAT(r.plan.lane(sim0).failed, Contains("sim:0 made no progress"));
  CHECK(r.plan.lane(sim1).failed.empty());
  CHECK(r.out.kills == std::vector<uint32_t>{sim0});
  CHECK(ag::export_slots::load(r.store.data() + slot) == ag::export_state::gone);
  CHECK_THAT(r.plan.tensor(2)->failure, Contains("sim:0 made no progress"));
  // With its exporter gone, sim:1 is watched as any child: it reads, and is spared.
  emu.dead.insert(sim0);
  emu.run_all();
  r.plan.check_progress();
  CHECK(r.plan.lane(sim1).failed.empty());
  CHECK(all_nan(emu.on(sim1, 2)));
}

TEST_CASE("stopping marks every export a sent read still waits for as gone", "[planner][peers]") {
  rig r{remote_peers({sim0, sim1})};
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2}));
  r.submit(upload(sim0, 3, {3, 4}));
  emu.run_all();
  r.submit(move_to(sim1, 2, 1, 2));
  emu.run_all(); // read and acknowledged: its slot stays as written
  r.submit(move_to(sim1, 4, 3, 2));
  r.drain();
  const uint64_t done_slot = r.plan.tensor(1)->export_slot;
  const uint64_t waited_slot = r.plan.tensor(3)->export_slot;
  r.plan.stop();
  CHECK(ag::export_slots::load(r.store.data() + done_slot) == ag::export_state::ready);
  CHECK(ag::export_slots::load(r.store.data() + waited_slot) == ag::export_state::gone);
}
