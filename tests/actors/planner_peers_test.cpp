// The planner's direct paths between peer lanes of one process: peer_copy and peer_sum, no store.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/planner.hpp"
#include "graph/collective.hpp"
#include "tests/actors/planner_collective_helpers.hpp"

using Catch::Contains;
using namespace ag::test;

// -- direct paths between peer lanes --------------------------------------------------------------

TEST_CASE("a move between peer lanes is a peer_export on the source and one peer_copy through its "
          "slot on the destination, sent at once, and the source's release waits for the copy",
          "[planner][peers]") {
  rig r{with_peers(setup_of(), {sim0, sim1})};
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2, 3, 4})); // not run yet: the copy must read it after its writer
  const std::size_t live = r.plan.store().live_bytes();
  REQUIRE(live == range); // the upload's staging range

  r.submit(move_to(sim1, 2, 1, 4));
  CHECK(r.plan.held() == 0);
  CHECK(r.plan.store().live_bytes() == live + range); // the export slot, and no staging
  const uint64_t slot = r.plan.tensor(1)->export_slot;
  REQUIRE(slot != no_offset);
  const auto& q0 = r.plan.lane(sim0).queue;
  const auto& q1 = r.plan.lane(sim1).queue;
  REQUIRE(q0.size() == 2); // the upload's copy in, then the export
  CHECK(fields(q0[1].op) == export_fields(slot, 1, 4));
  REQUIRE(q1.size() == 1);
  CHECK(fields(q1[0].op) == imported_copy_fields(2, 1, 4, sim0, slot));
  CHECK(deps_str(q1[0].deps) == "1:2"); // the export
  CHECK(q1[0].deps.at(0).sent);         // sent, not run
  const auto* t = r.plan.tensor(2);
  REQUIRE(t != nullptr);
  CHECK(t->lane == sim1);
  CHECK(t->bytes == 16);
  CHECK(t->placed);
  CHECK(t->writer.lane == sim1);
  CHECK(t->writer.index == 1);
  CHECK(deps_str(r.plan.tensor(1)->readers) == "2:1");

  r.drain(); // both lanes at once: the copy's runner waits for the export's slot
  REQUIRE(r.out.batches(sim0) == 1);
  REQUIRE(r.out.batches(sim1) == 1);
  CHECK_FALSE(emu.step(sim1));

  // The user lets go of #1 while its reader has not run: the release waits for it.
  r.plan.release(1);
  CHECK(r.plan.tensor(1) == nullptr);
  REQUIRE(q0.size() == 1);
  CHECK(q0.back().release);
  CHECK(q0.back().released == 1);
  CHECK(deps_str(q0.back().deps) == "2:1");
  r.drain();
  CHECK(r.out.batches(sim0) == 1);

  REQUIRE(emu.step(sim0)); // #1 written and exported
  CHECK(emu.released.empty());
  REQUIRE(emu.step(sim1)); // the copy ran
  r.drain();
  REQUIRE(r.out.batches(sim0) == 2);
  CHECK(r.out.runs[sim0][1].ops.empty());
  CHECK(r.out.runs[sim0][1].no_hold == std::vector<ag::operand_id>{1});
  emu.run_all();
  CHECK(emu.released == std::vector<std::pair<uint32_t, ag::operand_id>>{{sim0, 1}});
  CHECK(emu.mem[sim0].count(1) == 0);
  CHECK(emu.on(sim1, 2) == std::vector<float>{1, 2, 3, 4});
  CHECK(r.ops_of(cpu).empty());
  CHECK(r.ops_of(sim1).size() == 1);
  CHECK(r.plan.store().live_bytes() == 0); // the slot went with #1
  CHECK(r.plan.pending_frees() == 0);
  all_queues_empty(r);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a move between peer lanes larger than half the store is one peer_copy and no pieces",
          "[planner][peers]") {
  rig r{with_peers(setup_of(small_store), {sim0, sim1})};
  emulator emu{r};
  r.submit(upload(sim0, 1, ramp(1000, 3))); // 4000 bytes: in pieces through the store
  emu.run_all();
  REQUIRE(r.plan.store().live_bytes() == 0);
  REQUIRE(r.plan.held() == 0);
  const std::size_t sim0_ops = r.ops_of(sim0).size();

  r.submit(move_to(sim1, 2, 1, 1000));
  CHECK(r.plan.held() == 0); // not streamed in pieces
  CHECK(r.plan.store().live_bytes() == range); // #1's export slot, nothing staged
  const uint64_t slot = r.plan.tensor(1)->export_slot;
  const auto& q1 = r.plan.lane(sim1).queue;
  REQUIRE(q1.size() == 1);
  CHECK(fields(q1[0].op) == imported_copy_fields(2, 1, 1000, sim0, slot));
  REQUIRE(r.plan.lane(sim0).queue.size() == 1);
  CHECK(fields(r.plan.lane(sim0).queue[0].op) == export_fields(slot, 1, 1000));
  CHECK(r.plan.tensor(2)->bytes == 4000);

  emu.run_all();
  CHECK(emu.on(sim1, 2) == ramp(1000, 3));
  CHECK(r.ops_of(sim1).size() == 1);
  CHECK(r.ops_of(sim0).size() == sim0_ops + 1); // the export, nothing staged from #1
  CHECK(pieces_from(r, sim0, 1).empty());
  CHECK(r.plan.store().live_bytes() == range); // the slot serves while #1 lives
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a move between a peer pair and a device or the cpu that is no peer goes through the "
          "store",
          "[planner][peers]") {
  rig r{with_peers(setup_of(64 << 10, false, 4), {sim0, sim1})}; // sim:2 (lane 3) is no peer
  emulator emu{r};
  r.submit(upload(sim0, 1, {1, 2, 3, 4}));
  emu.run_all();
  REQUIRE(r.plan.store().live_bytes() == 0);

  SECTION("to the other of the pair") {
    r.submit(move_to(sim1, 2, 1, 4));
    CHECK(r.plan.store().live_bytes() == range); // the export slot
    REQUIRE(r.plan.lane(sim1).queue.size() == 1);
    CHECK(fields(r.plan.lane(sim1).queue[0].op)
          == imported_copy_fields(2, 1, 4, sim0, r.plan.tensor(1)->export_slot));
    emu.run_all();
    CHECK(emu.on(sim1, 2) == std::vector<float>{1, 2, 3, 4});
    CHECK(peer_ops(r) == 1);
  }
  SECTION("to a device that is no peer") {
    r.submit(move_to(sim2, 2, 1, 4));
    CHECK(r.plan.store().live_bytes() == ag::store_allocator::alignment); // a staging range
    const auto& q0 = r.plan.lane(sim0).queue;
    const auto& q3 = r.plan.lane(sim2).queue;
    REQUIRE(q0.size() == 1);
    REQUIRE(q3.size() == 1);
    CHECK(fields(q0[0].op) == copy_fields({0, 0}, {1, no_offset}, 4));
    CHECK(fields(q3[0].op) == copy_fields({2, no_offset}, {0, 0}, 4));
    CHECK(deps_str(q3[0].deps) == "1:2");
    emu.run_all();
    CHECK(emu.on(sim2, 2) == std::vector<float>{1, 2, 3, 4});
    CHECK(peer_ops(r) == 0);
  }
  SECTION("from a device that is no peer to one of the pair") {
    r.submit(move_to(sim2, 2, 1, 4));
    emu.run_all();
    r.submit(move_to(sim1, 3, 2, 4));
    CHECK(r.plan.store().live_bytes() == ag::store_allocator::alignment);
    REQUIRE(r.plan.lane(sim1).queue.size() == 1);
    CHECK(r.plan.lane(sim1).queue[0].op.kind == ag::op_kind::copy);
    CHECK(r.plan.lane(sim1).queue[0].op.a.on_host());
    emu.run_all();
    CHECK(emu.on(sim1, 3) == std::vector<float>{1, 2, 3, 4});
    CHECK(peer_ops(r) == 0);
  }
  SECTION("to the cpu") {
    r.submit(move_to(cpu, 2, 1, 4));
    const auto* t = r.plan.tensor(2);
    REQUIRE(t != nullptr);
    CHECK(t->lane == cpu);
    CHECK(t->offset == 0);
    REQUIRE(r.plan.lane(sim0).queue.size() == 1);
    CHECK(fields(r.plan.lane(sim0).queue[0].op) == copy_fields({2, 0}, {1, no_offset}, 4));
    emu.run_all();
    CHECK(r.floats_at(0, 4) == std::vector<float>{1, 2, 3, 4});
    CHECK(peer_ops(r) == 0);
    CHECK(r.plan.store().live_bytes() == ag::store_allocator::alignment); // the cpu tensor
  }
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a one-shot all_reduce between peers is one peer_sum per lane over a group the planner "
          "wrote in the store, after every part's export",
          "[planner][collectives]") {
  rig r{with_peers(setup_of(64 << 10, false, 4), {sim0, sim1, sim2})};
  emulator emu{r};
  std::vector<uint32_t> lanes;
  std::string group_want;
  SECTION("two peers") {
    lanes = {sim0, sim1};
    group_want = "1:#1 2:#2";
  }
  SECTION("three peers") {
    lanes = {sim0, sim1, sim2};
    group_want = "1:#1 2:#2 3:#3";
  }
  const uint64_t count = 5;
  const auto parts = peer_parts(r, emu, lanes, count);
  const uint64_t w = lanes.size();
  std::vector<ag::operand_id> ins, outs;
  for (uint64_t i = 0; i < w; ++i) {
    ins.push_back(i + 1);
    outs.push_back(11 + i);
  }
  r.submit(collective(ag::collective_kind::all_reduce, ins, lanes, outs, lanes, count));
  CHECK(r.plan.held() == 0);
  CHECK(r.plan.store().live_bytes() == (1 + w) * range); // the group and the parts' exports
  CHECK(r.plan.pending_frees() == 1);
  CHECK(r.plan.lane(cpu).queue.empty());
  uint64_t group = no_offset;
  for (uint64_t i = 0; i < w; ++i) {
    const uint32_t l = lanes[i];
    INFO("lane " << l);
    const auto& q = r.plan.lane(l).queue;
    REQUIRE(q.size() == 2);
    CHECK(fields(q[0].op) == export_fields(r.plan.tensor(ins[i])->export_slot, ins[i], count));
    if (i == 0)
      group = q[1].op.a.offset;
    CHECK(fields(q[1].op) == peer_sum_fields(outs[i], group, count, 0, w));
    std::string deps; // every other lane's export of its part (operator 2), sent
    for (uint32_t o : lanes)
      if (o != l)
        deps += (deps.empty() ? "" : " ") + std::to_string(o) + ":2";
    CHECK(deps_str(q[1].deps) == deps);
    for (const auto& d : q[1].deps)
      CHECK(d.sent);
    CHECK(ids_str(q[1].sources) == ids_str(ins));
    const auto* t = r.plan.tensor(outs[i]);
    REQUIRE(t != nullptr);
    CHECK(t->lane == l);
    CHECK(t->bytes == count * sizeof(float));
    CHECK(t->placed);
    CHECK(t->failure.empty());
    CHECK(t->writer.lane == l);
    CHECK(t->writer.index == 3);
  }
  REQUIRE(group != no_offset);
  CHECK(group_at(r, group, w) == group_want);
  std::string readers; // every lane's peer_sum reads every part
  for (uint32_t l : lanes)
    readers += (readers.empty() ? "" : " ") + std::to_string(l) + ":3";
  for (auto id : ins)
    CHECK(deps_str(r.plan.tensor(id)->readers) == readers);

  emu.run_all();
  const auto want = sum_all(parts);
  for (uint64_t i = 0; i < w; ++i) {
    INFO("result #" << outs[i]);
    CHECK(emu.on(lanes[i], outs[i]) == want);
    CHECK(r.ops_of(lanes[i]).size() == 3); // the upload's copy, the export and the peer_sum
  }
  CHECK(r.ops_of(cpu).empty());
  CHECK(r.plan.store().live_bytes() == w * range); // the exports serve while the parts live
  CHECK(r.plan.pending_frees() == 0);
  all_queues_empty(r);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a two-shot all_reduce between peers sums one block per lane then gathers every block "
          "and releases the blocks after their readers",
          "[planner][collectives]") {
  auto setup = with_peers(setup_of(64 << 10, false, 4), {sim0, sim1, sim2});
  setup.one_shot_bytes = 4; // one element: anything longer is two-shot
  rig r{std::move(setup)};
  emulator emu{r};
  std::vector<uint32_t> lanes;
  uint64_t count = 0;
  uint64_t blocks_want = 0;
  SECTION("a count not divisible by the parts") {
    lanes = {sim0, sim1, sim2};
    count = 10; // blocks of 4, 4 and 2
    blocks_want = 3;
  }
  SECTION("a count smaller than the parts") {
    lanes = {sim0, sim1, sim2};
    count = 2; // blocks of 1: sim:2 sums none
    blocks_want = 2;
  }
  SECTION("two parts") {
    lanes = {sim1, sim0}; // block 0 on sim:1
    count = 7;            // blocks of 4 and 3
    blocks_want = 2;
  }
  const auto parts = peer_parts(r, emu, lanes, count);
  const uint64_t w = lanes.size();
  const uint64_t block = (count + w - 1) / w;
  std::vector<ag::operand_id> ins, outs;
  for (uint64_t i = 0; i < w; ++i) {
    ins.push_back(i + 1);
    outs.push_back(11 + i);
  }
  r.submit(collective(ag::collective_kind::all_reduce, ins, lanes, outs, lanes, count));
  CHECK(r.plan.held() == 0);
  // The group, the parts' exports and the blocks' exports.
  CHECK(r.plan.store().live_bytes() == (1 + w + blocks_want) * range);

  // Each lane: its part's export (operator 2), then, where it has a block, the block's sum (3)
  // into an operand of the planner's own and the block's export (4).
  std::vector<ag::operand_id> blocks;
  std::vector<uint64_t> sizes, block_slots;
  uint64_t group = no_offset;
  for (uint64_t b = 0; b < w; ++b) {
    const uint32_t l = lanes[b];
    INFO("lane " << l << " block " << b);
    const auto& q = r.plan.lane(l).queue;
    REQUIRE(q.size() >= 2);
    CHECK(fields(q[0].op) == export_fields(r.plan.tensor(ins[b])->export_slot, ins[b], count));
    if (b * block >= count) { // no block to sum: the gathers follow its export
      CHECK(q[1].op.kind == ag::op_kind::peer_copy);
      continue;
    }
    const auto& op = q[1].op;
    REQUIRE(op.kind == ag::op_kind::peer_sum);
    CHECK(op.out.id >= own_ids);
    if (group == no_offset)
      group = op.a.offset;
    const uint64_t n = std::min(block, count - b * block);
    CHECK(fields(op) == peer_sum_fields(op.out.id, group, n, b * block, w));
    CHECK(ids_str(q[1].sources) == ids_str(ins));
    REQUIRE(q[2].op.kind == ag::op_kind::peer_export);
    CHECK(q[2].op.a.id == op.out.id);
    blocks.push_back(op.out.id);
    sizes.push_back(n);
    block_slots.push_back(q[2].op.out.offset);
    CHECK(r.plan.tensor(op.out.id) == nullptr); // released at once: on its lane after readers
  }
  REQUIRE(blocks.size() == blocks_want);
  CHECK(std::set<ag::operand_id>(blocks.begin(), blocks.end()).size() == blocks.size());
  CHECK(group_at(r, group, w) == [&] {
    std::string g;
    for (uint64_t i = 0; i < w; ++i)
      g += (g.empty() ? "" : " ") + std::to_string(lanes[i]) + ":#" + std::to_string(ins[i]);
    return g;
  }());

  // The gathers: every lane copies block b, from lanes[b], into its result at b * block: its own
  // in place, another lane's through that block's export, once it is sent.
  std::map<uint32_t, std::map<uint64_t, uint64_t>> piece_index; // lane, block -> operator index
  for (uint64_t i = 0; i < w; ++i) {
    const uint32_t l = lanes[i];
    INFO("lane " << l);
    const auto& q = r.plan.lane(l).queue;
    const bool sums = i < blocks.size();
    const std::size_t first = sums ? 3 : 1;
    REQUIRE(q.size() == first + blocks.size() + (sums ? 1 : 0));
    uint64_t index = 1 + first;
    for (uint64_t b = 0; b < blocks.size(); ++b) {
      INFO("piece of block " << b);
      const auto& e = q[first + b];
      CHECK_FALSE(e.release);
      if (lanes[b] == l) {
        CHECK(fields(e.op) == peer_copy_fields(outs[i], blocks[b], sizes[b], l, b * block, count));
        CHECK(e.deps.empty());
      } else {
        CHECK(fields(e.op) == imported_copy_fields(outs[i], blocks[b], sizes[b], lanes[b],
                                                   block_slots[b], b * block, count));
        CHECK(deps_str(e.deps) == std::to_string(lanes[b]) + ":4");
      }
      piece_index[l][b] = ++index;
    }
    const auto* t = r.plan.tensor(outs[i]);
    REQUIRE(t != nullptr);
    CHECK(t->bytes == count * sizeof(float));
    CHECK(t->writer.lane == l);
    CHECK(t->writer.index == index);
  }
  // Then each block's release on its lane, after every other lane's piece of it.
  for (uint64_t b = 0; b < blocks.size(); ++b) {
    const uint32_t l = lanes[b];
    INFO("release of block " << b << " on lane " << l);
    const auto& e = r.plan.lane(l).queue.back();
    REQUIRE(e.release);
    CHECK(e.released == blocks[b]);
    std::string deps;
    for (uint32_t o : lanes)
      if (o != l)
        deps += (deps.empty() ? "" : " ") + std::to_string(o) + ":"
                + std::to_string(piece_index[o][b]);
    CHECK(deps_str(e.deps) == deps);
  }

  emu.run_all();
  const auto want = sum_all(parts);
  for (uint64_t i = 0; i < w; ++i) {
    INFO("result #" << outs[i]);
    CHECK(emu.on(lanes[i], outs[i]) == want);
  }
  std::vector<std::pair<uint32_t, ag::operand_id>> released_want;
  for (uint64_t b = 0; b < blocks.size(); ++b)
    released_want.push_back({lanes[b], blocks[b]});
  auto released = emu.released;
  std::sort(released.begin(), released.end());
  std::sort(released_want.begin(), released_want.end());
  CHECK(released == released_want);
  for (uint32_t l : lanes)
    for (auto id : blocks)
      CHECK(emu.mem[l].count(id) == 0);
  CHECK(r.ops_of(cpu).empty());
  CHECK(r.plan.store().live_bytes() == w * range); // the parts' exports; the blocks' went
  CHECK(r.plan.pending_frees() == 0);
  all_queues_empty(r);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("reduce_scatter all_gather and broadcast between peers are direct and give the right "
          "values",
          "[planner][collectives]") {
  rig r{with_peers(setup_of(64 << 10, false, 4), {sim0, sim1, sim2})};
  emulator emu{r};
  const std::vector<uint32_t> lanes{sim0, sim1, sim2};

  SECTION("reduce_scatter") {
    const auto parts = peer_parts(r, emu, lanes, 6); // blocks of 2
    r.submit(collective(ag::collective_kind::reduce_scatter, {1, 2, 3}, lanes, {11, 12, 13},
                        lanes, 6));
    CHECK(r.plan.held() == 0);
    CHECK(r.plan.store().live_bytes() == 4 * range); // the group and the parts' exports
    uint64_t group = no_offset;
    for (uint64_t i = 0; i < 3; ++i) {
      INFO("lane " << lanes[i]);
      const auto& q = r.plan.lane(lanes[i]).queue;
      REQUIRE(q.size() == 2);
      CHECK(q[0].op.kind == ag::op_kind::peer_export);
      if (group == no_offset)
        group = q[1].op.a.offset;
      CHECK(fields(q[1].op) == peer_sum_fields(11 + i, group, 2, 2 * i, 3));
      CHECK(r.plan.tensor(11 + i)->bytes == 8);
    }
    CHECK(group_at(r, group, 3) == "1:#1 2:#2 3:#3");
    emu.run_all();
    const auto sum = sum_all(parts);
    for (uint64_t i = 0; i < 3; ++i)
      CHECK(emu.on(lanes[i], 11 + i) == slice(sum, 2 * i, 2));
  }
  SECTION("all_gather") {
    const auto parts = peer_parts(r, emu, lanes, 4);
    r.submit(collective(ag::collective_kind::all_gather, {1, 2, 3}, lanes, {11, 12, 13}, lanes,
                        4));
    CHECK(r.plan.held() == 0);
    CHECK(r.plan.store().live_bytes() == 3 * range); // the parts' exports; nothing to sum
    for (uint64_t i = 0; i < 3; ++i) {
      INFO("lane " << lanes[i]);
      const auto& q = r.plan.lane(lanes[i]).queue;
      REQUIRE(q.size() == 4); // its part's export, then a piece of every part
      CHECK(q[0].op.kind == ag::op_kind::peer_export);
      for (uint64_t p = 0; p < 3; ++p) {
        const auto slot = r.plan.tensor(p + 1)->export_slot;
        CHECK(fields(q[1 + p].op)
              == (lanes[p] == lanes[i]
                    ? peer_copy_fields(11 + i, p + 1, 4, lanes[p], 4 * p, 12)
                    : imported_copy_fields(11 + i, p + 1, 4, lanes[p], slot, 4 * p, 12)));
        CHECK(deps_str(q[1 + p].deps)
              == (lanes[p] == lanes[i] ? "" : std::to_string(lanes[p]) + ":2"));
      }
      CHECK(r.plan.tensor(11 + i)->bytes == 48);
    }
    emu.run_all();
    for (uint64_t i = 0; i < 3; ++i)
      CHECK(emu.on(lanes[i], 11 + i) == concat(parts));
  }
  SECTION("broadcast") {
    r.submit(upload(sim0, 1, ramp(6, 7)));
    emu.run_all();
    r.submit(collective(ag::collective_kind::broadcast, {1}, {sim0}, {11, 12}, {sim1, sim2}, 6));
    CHECK(r.plan.held() == 0);
    CHECK(r.plan.store().live_bytes() == range); // the source's export
    const auto slot = r.plan.tensor(1)->export_slot;
    for (uint32_t l : {sim1, sim2}) {
      INFO("lane " << l);
      const auto& q = r.plan.lane(l).queue;
      REQUIRE(q.size() == 1);
      CHECK(fields(q[0].op) == imported_copy_fields(l == sim1 ? 11 : 12, 1, 6, sim0, slot));
      CHECK(deps_str(q[0].deps) == "1:2");
    }
    REQUIRE(r.plan.lane(sim0).queue.size() == 1);
    CHECK(fields(r.plan.lane(sim0).queue[0].op) == export_fields(slot, 1, 6));
    CHECK(deps_str(r.plan.tensor(1)->readers) == "2:1 3:1");
    emu.run_all();
    CHECK(emu.on(sim1, 11) == ramp(6, 7));
    CHECK(emu.on(sim2, 12) == ramp(6, 7));
  }
  CHECK(r.ops_of(cpu).empty());
  CHECK(count_kind(r.ops_of(sim0), ag::op_kind::copy) == 1); // the upload's alone
  CHECK(r.plan.store().live_bytes() % range == 0); // the exports, while the parts live
  CHECK(r.plan.pending_frees() == 0);
  all_queues_empty(r);
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a collective that mixes a peer lane with the cpu or with a device that is no peer goes "
          "through the store",
          "[planner][collectives]") {
  rig r{with_peers(setup_of(64 << 10, false, 4), {sim0, sim1})}; // sim:2 (lane 3) is no peer
  emulator emu{r};
  std::vector<uint32_t> from, to;
  SECTION("a cpu part") {
    from = {sim0, cpu};
    to = {sim0, sim1};
  }
  SECTION("a cpu result") {
    from = {sim0, sim1};
    to = {sim0, cpu};
  }
  SECTION("a part on a device that is no peer") {
    from = {sim0, sim1, sim2};
    to = {sim0, sim1, sim2};
  }
  SECTION("a result on a device that is no peer") {
    from = {sim0, sim1};
    to = {sim1, sim2};
  }
  std::vector<std::vector<float>> parts;
  std::vector<ag::operand_id> ins, outs;
  for (std::size_t i = 0; i < from.size(); ++i) {
    parts.push_back(ramp(4, 10.0f * static_cast<float>(i + 1)));
    r.submit(upload(from[i], i + 1, parts.back()));
    ins.push_back(i + 1);
  }
  for (std::size_t i = 0; i < to.size(); ++i)
    outs.push_back(11 + i);
  emu.run_all();
  r.submit(collective(ag::collective_kind::all_reduce, ins, from, outs, to, 4));
  CHECK(r.plan.held() == 0);
  emu.run_all();
  CHECK(peer_ops(r) == 0);
  CHECK(count_kind(r.ops_of(cpu), ag::op_kind::add) == from.size() - 1);
  const auto want = sum_all(parts);
  for (std::size_t i = 0; i < to.size(); ++i) {
    INFO("result #" << outs[i] << " on lane " << to[i]);
    if (to[i] == cpu)
      CHECK(r.floats_at(r.plan.tensor(outs[i])->offset, 4) == want);
    else
      CHECK(emu.on(to[i], outs[i]) == want);
    CHECK(r.plan.tensor(outs[i])->failure.empty());
  }
  const auto s = r.sync();
  CHECK_FALSE(r.out.answer_of(s).code);
}

TEST_CASE("a peer lane failing before it wrote the exports an all_reduce reads taints every result "
          "naming the device, and the reads of them write NaN",
          "[planner][collectives]") {
  auto setup = with_peers(setup_of(), {sim0, sim1});
  bool two_shot = false;
  SECTION("one-shot") {}
  SECTION("two-shot") {
    setup.one_shot_bytes = 4;
    two_shot = true;
  }
  rig r{std::move(setup)};
  emulator emu{r};
  // The parts' uploads are sent, not run; so is every direct op of the collective, each after
  // the exports it reads were sent: its runner waits for them.
  r.submit(upload(sim0, 1, ramp(6, 0)));
  r.submit(upload(sim1, 2, ramp(6, 100)));
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4}, {sim0, sim1},
                      6));
  r.drain();
  // Every direct op is sent (sim:0's sum in one more pass, after sim:1's export): only the
  // two-shot blocks' releases wait, for their readers.
  for (uint32_t l : {sim0, sim1})
    for (const auto& e : r.plan.lane(l).queue)
      CHECK(e.release);
  CHECK(peer_ops(r) == (two_shot ? 6u : 2u));
  const std::size_t sim1_batches = r.out.batches(sim1);
  const auto s_before = r.sync();

  r.plan.failed(sim0, 1, "copy: bad launch");
  emu.dead.insert(sim0);
  const std::string lane_why = "sim:0: copy: bad launch";
  for (ag::operand_id id : {3, 4}) {
    INFO("result #" << id);
    CHECK_THAT(r.plan.tensor(id)->failure, Contains(lane_why));
  }
  // What goes to sim:1 now reads nothing of sim:0's; its reads sent before find sim:0's export
  // slots gone.
  for (std::size_t b = sim1_batches; b < r.out.batches(sim1); ++b)
    for (const auto& op : r.out.runs[sim1][b].ops)
      CHECK_FALSE(reads_lane(r, op, sim0));
  CHECK_FALSE(r.out.was_answered(s_before));
  emu.run_all();
  CHECK(all_nan(emu.on(sim1, 4)));
  REQUIRE_FALSE(emu.lost_imports.empty());
  for (const auto& [l, id] : emu.lost_imports)
    CHECK(l == sim1);
  all_queues_empty(r);
  CHECK(r.plan.lane(sim1).done == r.plan.lane(sim1).issued);
  REQUIRE(r.out.was_answered(s_before));
  CHECK(r.out.answer_of(s_before).code == ag::errc::device_failed);
  CHECK_THAT(r.out.answer_of(s_before).what, Contains(lane_why));
  const auto s = r.sync(); // everything is acknowledged: answered at once
  REQUIRE(r.out.was_answered(s));
  CHECK(r.plan.pending_frees() == 0);
  CHECK(r.plan.store().live_bytes() == 2 * range); // the parts' export slots, while they live
  for (const auto& [l, id] : emu.released)
    CHECK(l == sim1);
  CHECK(emu.mem[sim1].size() == 2); // #2 and #4 (two-shot: its block is gone)
}

TEST_CASE("the group range of a direct all_reduce is freed once every lane acknowledged its sum",
          "[planner][collectives]") {
  rig r{with_peers(setup_of(), {sim0, sim1})};
  emulator emu{r};
  two_device_parts(r, emu, 8);
  r.submit(upload(cpu, 9, filled(64, 9.0f))); // a cpu tensor the store keeps
  const std::size_t live = r.plan.store().live_bytes();
  REQUIRE(live == ag::store_allocator::alignment);
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4}, {sim0, sim1},
                      8));
  CHECK(r.plan.store().live_bytes() == live + 3 * range); // the group, the parts' exports
  r.drain();
  REQUIRE(emu.step(sim0)); // its export (its sum went out in a second pass, after sim:1's)
  REQUIRE(emu.step(sim1)); // its export and its sum
  r.drain();
  CHECK(r.plan.store().live_bytes() == live + 3 * range); // sim:0's sum still reads the group
  CHECK(r.plan.pending_frees() == 1);
  REQUIRE(emu.step(sim0)); // its sum
  r.drain();
  CHECK(r.plan.store().live_bytes() == live + 2 * range); // the exports stay with the parts
  CHECK(r.plan.pending_frees() == 0);
  const auto want = sum_of(ramp(8, 0), ramp(8, 1000));
  CHECK(emu.on(sim0, 3) == want);
  CHECK(emu.on(sim1, 4) == want);
  CHECK(r.floats_at(r.plan.tensor(9)->offset, 64) == filled(64, 9.0f));
}

TEST_CASE("a direct op still queued when its source's lane goes down reads nothing of that lane",
          "[planner][peers]") {
  rig r{with_peers(setup_of(), {sim0, sim1})};
  emulator emu{r};
  two_device_parts(r, emu, 4); // written and acknowledged
  SECTION("a move") {
    r.submit(move_to(sim1, 3, 1, 4));
  }
  SECTION("an all_reduce") {
    r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4},
                        {sim0, sim1}, 4));
  }
  SECTION("a move whose source the user let go at once") {
    r.submit(move_to(sim1, 3, 1, 4));
    r.plan.release(1); // its record goes; its release waits for the copy
  }
  SECTION("an all_reduce whose parts the user let go at once") {
    r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4},
                        {sim0, sim1}, 4));
    r.plan.release(1);
    r.plan.release(2);
  }
  // Before the flush that would send the direct op, sim:0's runner goes, and its memory with it.
  const std::string why = "runner of sim:0 stopped: exited with code 3";
  r.plan.lane_down(sim0, why);
  emu.dead.insert(sim0);
  emu.mem.erase(sim0);
  r.drain();
  const ag::operand_id result = r.plan.tensor(4) != nullptr ? 4 : 3; // sim:1's
  CHECK_THAT(r.plan.tensor(result)->failure, Contains(why));
  const auto ops = r.ops_of(sim1);
  REQUIRE_FALSE(ops.empty());
  for (const auto& op : ops) {
    INFO(fields(op));
    CHECK_FALSE(reads_lane(r, op, sim0)); // sim:0's operands are gone with its runner
  }
}

TEST_CASE("a collective on one device lane with no peers configured sends no peer operators",
          "[planner][collectives]") {
  rig r; // no peers: the runners have no peer directory and cannot run peer_copy or peer_sum
  emulator emu{r};
  r.submit(upload(sim0, 1, ramp(4, 5)));
  emu.run_all();
  std::vector<float> want;
  SECTION("all_reduce") {
    r.submit(collective(ag::collective_kind::all_reduce, {1}, {sim0}, {3}, {sim0}, 4));
    want = ramp(4, 5);
  }
  SECTION("all_gather") {
    r.submit(collective(ag::collective_kind::all_gather, {1}, {sim0}, {3}, {sim0}, 4));
    want = ramp(4, 5);
  }
  SECTION("reduce_scatter") {
    r.submit(collective(ag::collective_kind::reduce_scatter, {1}, {sim0}, {3}, {sim0}, 4));
    want = ramp(4, 5);
  }
  emu.run_all();
  CHECK(peer_ops(r) == 0);
  CHECK(emu.on(sim0, 3) == want);
  CHECK(r.plan.tensor(3)->failure.empty());
}

TEST_CASE("a part read by many direct collectives keeps only the readers that have not run",
          "[planner][peers]") {
  rig r{with_peers(setup_of(), {sim0, sim1})};
  emulator emu{r};
  two_device_parts(r, emu, 8);
  for (ag::operand_id out = 10; out < 10 + 2 * 200; out += 2) {
    r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {out, out + 1},
                        {sim0, sim1}, 8));
    emu.run_all();
    r.plan.release(out);
    r.plan.release(out + 1);
  }
  emu.run_all();
  // Each all_reduce read #1 from both lanes; only the last one's readers may still be listed.
  CHECK(r.plan.tensor(1)->readers.size() <= 2);
  CHECK(r.plan.tensor(2)->readers.size() <= 2);
  const auto want = sum_of(ramp(8, 0), ramp(8, 1000));
  r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {1000, 1001},
                      {sim0, sim1}, 8));
  emu.run_all();
  CHECK(emu.on(sim1, 1001) == want);
}
