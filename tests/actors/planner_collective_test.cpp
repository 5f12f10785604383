// The planner's collectives (actors/planner_collective.cpp) driven directly, as the executor drives
// them: a collective_request in, and the per-lane operators it asks for checked field by field and
// then run by a small emulator (the cpu lane over the real store buffer, each device lane over a
// map of operands), so that what the results hold is checked end to end through the planner alone.
// No actors, no runners, no clocks waited on.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/flow_control.hpp"
#include "actors/planner.hpp"
#include "graph/collective.hpp"
#include "graph/export_slot.hpp"
#include "ipc/wire.hpp"
#include "tests/actors/planner_rig.hpp"

using namespace std::chrono_literals;
using Catch::Contains;
using Catch::StartsWith;
using namespace ag::test;

namespace {

// -- beside the rig (tests/actors/planner_rig.hpp) ------------------------------------------------

constexpr uint32_t sim2 = 3; // lanes of a setup_of with more lanes
constexpr float unwritten = -12345.0f; // what the emulator gives a device operand's elements first

std::string add_fields(ag::operand_ref out, ag::operand_ref a, ag::operand_ref b,
                       uint64_t count) {
  return fields(ag::op_desc{ag::op_kind::add, out, a, b, count, 0, 0, 0});
}

std::string deps_str(const std::vector<ag::dependency>& deps) {
  std::string s;
  for (const auto& d : deps)
    s += (s.empty() ? "" : " ") + std::to_string(d.lane) + ":" + std::to_string(d.index);
  return s;
}

ag::collective_request collective(ag::collective_kind kind, std::vector<ag::operand_id> parts,
                                  std::vector<uint32_t> from, std::vector<ag::operand_id> outs,
                                  std::vector<uint32_t> to, uint64_t count) {
  ag::collective_request c;
  c.kind = kind;
  c.parts = std::move(parts);
  for (uint32_t l : from)
    c.from.push_back(dev(l));
  c.outs = std::move(outs);
  for (uint32_t l : to)
    c.to.push_back(dev(l));
  c.count = count;
  return c;
}

// base, base + 1, ...
std::vector<float> ramp(std::size_t n, float base) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = base + static_cast<float>(i);
  return v;
}

std::vector<float> sum_of(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  std::vector<float> v(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    v[i] = a[i] + b[i];
  return v;
}

std::vector<float> slice(const std::vector<float>& v, std::size_t first, std::size_t n) {
  REQUIRE(first + n <= v.size());
  return std::vector<float>(v.begin() + first, v.begin() + first + n);
}

bool all_nan(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isnan(x))
      return false;
  return true;
}

// -- the emulated runners ---------------------------------------------------------------------------

// Runs what the planner sent each lane: the cpu lane's ops against the real store, a device
// lane's against its own map of operands (a piece, op.n != 0, is elements [m, m + count) of an
// op.n-element device operand; the piece at m = 0 creates it), then acknowledges the batch.
struct emulator {
  explicit emulator(rig& r) : r(r) {}

  std::vector<float> read(uint32_t lane, const ag::op_desc& op, const ag::operand_ref& ref) {
    if (ref.on_host())
      return r.floats_at(ref.offset, op.count);
    INFO("lane " << lane << " reads " << ref_str(ref) << " in " << fields(op));
    auto& m = mem[lane];
    auto it = m.find(ref.id);
    REQUIRE(it != m.end());
    if (op.n != 0) {
      REQUIRE(it->second.size() == op.n);
      REQUIRE(op.m + op.count <= op.n);
      return slice(it->second, op.m, op.count);
    }
    REQUIRE(it->second.size() == op.count);
    return it->second;
  }

  void write(uint32_t lane, const ag::op_desc& op, const ag::operand_ref& ref,
             const std::vector<float>& v) {
    INFO("lane " << lane << " writes " << ref_str(ref) << " in " << fields(op));
    if (ref.on_host()) {
      REQUIRE(ref.offset <= r.store.size());
      REQUIRE(v.size() * sizeof(float) <= r.store.size() - ref.offset);
      std::memcpy(r.store.data() + ref.offset, v.data(), v.size() * sizeof(float));
      return;
    }
    auto& m = mem[lane];
    if (op.n == 0) {
      m[ref.id] = v;
      return;
    }
    if (op.m == 0)
      m[ref.id] = filled(op.n, unwritten);
    auto it = m.find(ref.id);
    REQUIRE(it != m.end());
    REQUIRE(it->second.size() == op.n);
    REQUIRE(op.m + v.size() <= op.n);
    std::copy(v.begin(), v.end(), it->second.begin() + static_cast<std::ptrdiff_t>(op.m));
  }

  void execute(uint32_t lane, const ag::op_desc& op) {
    switch (op.kind) {
      case ag::op_kind::fill: write(lane, op, op.out, filled(op.count, op.scalar)); break;
      case ag::op_kind::copy: write(lane, op, op.out, read(lane, op, op.a)); break;
      case ag::op_kind::add:
        write(lane, op, op.out, sum_of(read(lane, op, op.a), read(lane, op, op.b)));
        break;
      case ag::op_kind::relu: {
        auto v = read(lane, op, op.a);
        for (auto& x : v)
          x = std::max(x, 0.0f);
        write(lane, op, op.out, v);
        break;
      }
      case ag::op_kind::peer_copy: {
        // Lane k's operand a where it lies, whole, into out (or into its piece [m, m + count)).
        INFO("lane " << lane << " runs " << fields(op));
        REQUIRE_FALSE(op.out.on_host());
        REQUIRE_FALSE(op.a.on_host());
        // A lane reads another lane's operand through its export (b: the slot), never else.
        const auto from = static_cast<uint32_t>(op.k);
        const bool import = from != lane;
        if (import) {
          REQUIRE(op.b.on_host());
          REQUIRE(op.b.id == 0);
        } else {
          REQUIRE_FALSE(op.b.on_host());
        }
        const std::vector<float> v =
          import ? imported(lane, from, op.a.id, op.b.offset, op.count) : in_place(from, op.a.id);
        REQUIRE(v.size() == op.count);
        if (op.n == 0 || op.m == 0) // it creates its result, which must not exist yet
          REQUIRE(mem[lane].count(op.out.id) == 0);
        write(lane, op, op.out, v);
        break;
      }
      case ag::op_kind::peer_sum: {
        // The group of k peer_entry records in the store at a's offset: elements [m, m + count)
        // of every operand it names, summed in the group's order into a new result.
        INFO("lane " << lane << " runs " << fields(op));
        REQUIRE_FALSE(op.out.on_host());
        REQUIRE(op.a.on_host());
        REQUIRE(op.a.id == 0);
        REQUIRE(op.n == 0);
        REQUIRE(op.k >= 1);
        REQUIRE(op.a.offset <= r.store.size());
        REQUIRE(op.k * sizeof(ag::peer_entry) <= r.store.size() - op.a.offset);
        std::vector<ag::peer_entry> group(op.k);
        std::memcpy(group.data(), r.store.data() + op.a.offset, op.k * sizeof(ag::peer_entry));
        std::vector<float> acc;
        for (const auto& g : group) {
          INFO("group entry lane " << g.lane << " #" << g.id << " slot " << g.slot);
          CHECK(g.reserved == 0);
          // A lane reads its own entry in place and another lane's through its export.
          const bool import = g.lane != lane;
          if (import)
            REQUIRE(g.slot != no_offset);
          const std::vector<float> whole =
            import ? imported(lane, g.lane, g.id, g.slot, op.m + op.count) : in_place(g.lane, g.id);
          REQUIRE(op.m + op.count <= whole.size());
          const auto part = slice(whole, op.m, op.count);
          acc = acc.empty() ? part : sum_of(acc, part);
        }
        REQUIRE(mem[lane].count(op.out.id) == 0);
        write(lane, op, op.out, acc);
        break;
      }
      case ag::op_kind::peer_export: {
        // A child writes a recognisable export of its operand a into the slot: its bytes, its
        // lane and a pid, and (as its "memory handle") the operand's id.
        INFO("lane " << lane << " runs " << fields(op));
        REQUIRE(lane != ag::cpu_lane); // only device lanes export
        REQUIRE(op.out.on_host());
        REQUIRE(op.out.id == 0);
        REQUIRE_FALSE(op.a.on_host());
        REQUIRE_FALSE(op.b.on_host());
        const auto src = mem[lane].find(op.a.id);
        REQUIRE(src != mem[lane].end());
        REQUIRE(src->second.size() == op.count);
        ag::export_slot x;
        x.bytes = op.count * sizeof(float);
        x.pid = static_cast<int32_t>(4000 + lane);
        x.lane = lane;
        x.index = static_cast<int32_t>(lane) - 1;
        std::memcpy(x.handle, &op.a.id, sizeof op.a.id);
        REQUIRE(op.out.offset <= r.store.size());
        REQUIRE(sizeof x <= r.store.size() - op.out.offset);
        // The planner cleared the slot before it sent this export.
        CHECK(ag::export_slots::load(r.store.data() + op.out.offset) != ag::export_state::ready);
        ag::export_slots::publish(r.store.data() + op.out.offset, x);
        exports.push_back({lane, op.a.id});
        break;
      }
      case ag::op_kind::peer_forget: {
        INFO("lane " << lane << " runs " << fields(op));
        REQUIRE(r.plan.lane(lane).remote);
        REQUIRE(op.k != lane);
        forgotten[lane].insert(static_cast<uint32_t>(op.k));
        break;
      }
      default: FAIL("the emulator does not run " << fields(op));
    }
  }

  // Operand id of lane `from`, read where it lies (this lane's own, or a peer's of this process).
  std::vector<float> in_place(uint32_t from, ag::operand_id id) {
    INFO("operand #" << id << " of lane " << from << " read in place");
    const auto src = mem[from].find(id);
    REQUIRE(src != mem[from].end());
    return src->second;
  }

  // Operand id of lane `from`, read by a child through the export slot at `slot`: the slot must
  // hold that operand's export, written by its lane's peer_export, and the reader must not have
  // forgotten that lane's exports. A slot the planner marked gone (its exporter failed first)
  // reads as `lost` NaNs, as a runner reads it.
  std::vector<float> imported(uint32_t lane, uint32_t from, ag::operand_id id, uint64_t slot,
                              std::size_t lost) {
    INFO("lane " << lane << " imports #" << id << " of lane " << from << " through slot " << slot);
    REQUIRE(slot <= r.store.size());
    REQUIRE(sizeof(ag::export_slot) <= r.store.size() - slot);
    const auto state = ag::export_slots::load(r.store.data() + slot);
    REQUIRE(state != ag::export_state::pending); // step() waits for it
    if (state == ag::export_state::gone) {
      lost_imports.push_back({lane, id});
      return filled(lost, std::numeric_limits<float>::quiet_NaN());
    }
    ag::export_slot x;
    std::memcpy(&x, r.store.data() + slot, sizeof x);
    REQUIRE(x.pid != 0); // written by a peer_export
    REQUIRE(x.lane == from);
    ag::operand_id handle = 0;
    std::memcpy(&handle, x.handle, sizeof handle);
    REQUIRE(handle == id); // the export of that very operand
    CHECK(forgotten[lane].count(from) == 0);
    const auto src = mem[from].find(id);
    REQUIRE(src != mem[from].end());
    REQUIRE(src->second.size() * sizeof(float) == x.bytes);
    imports.push_back({lane, id});
    return src->second;
  }

  // The batches lane l was sent: run in this process (the outbox's runs) or, a child's, its
  // batch of each broadcast (every child reads every broadcast).
  std::size_t sent(uint32_t l) {
    for (; broadcasts_read < r.out.broadcasts.size(); ++broadcasts_read)
      for (const auto& b : r.out.broadcasts[broadcasts_read].batches) {
        INFO("a broadcast's batch of lane " << b.lane);
        REQUIRE(r.plan.lane(b.lane).remote);
        inbox[b.lane].push_back(b);
      }
    return r.plan.lane(l).remote ? inbox[l].size() : r.out.batches(l);
  }

  // Every operator lane l was sent, in order (either way).
  std::vector<ag::op_desc> ops_sent(uint32_t l) {
    sent(l);
    if (!r.plan.lane(l).remote)
      return r.ops_of(l);
    std::vector<ag::op_desc> v;
    for (const auto& b : inbox[l])
      v.insert(v.end(), b.ops.begin(), b.ops.end());
    return v;
  }

  // True when op, on a child, imports an export whose slot is still pending: its runner waits
  // there (cuda/export_wait.hpp) until the exporter writes it or the planner marks it gone.
  bool waits_for_export(uint32_t lane, const ag::op_desc& op) {
    auto pending = [&](uint64_t slot) {
      return slot <= r.store.size() && sizeof(ag::export_slot) <= r.store.size() - slot
             && ag::export_slots::load(r.store.data() + slot) == ag::export_state::pending;
    };
    if (op.kind == ag::op_kind::peer_copy && op.k != lane && op.b.on_host())
      return pending(op.b.offset);
    if (op.kind != ag::op_kind::peer_sum || !op.a.on_host()
        || op.k * sizeof(ag::peer_entry) > r.store.size() - std::min(op.a.offset, r.store.size()))
      return false;
    std::vector<ag::peer_entry> group(op.k);
    std::memcpy(group.data(), r.store.data() + op.a.offset, op.k * sizeof(ag::peer_entry));
    for (const auto& g : group)
      if (g.lane != lane && g.slot != no_offset && pending(g.slot))
        return true;
    return false;
  }

  // Runs lane l's next operators, as far as it can, and acknowledges its batch once all ran;
  // false when it has none (or is dead) or its next operator waits for an export.
  bool step(uint32_t l) {
    if (dead.count(l) > 0 || ran[l] >= sent(l))
      return false;
    const bool remote = r.plan.lane(l).remote;
    // A copy: done() may send more.
    const ag::batch b = remote ? inbox[l][ran[l]] : r.out.runs[l][ran[l]];
    REQUIRE(b.lane == l);
    std::size_t& i = at[l];
    const std::size_t first = i;
    if (remote && first == 0) // its child read every broadcast so far
      r.plan.received(l, broadcasts_read);
    for (; i < b.ops.size(); ++i) {
      if (waits_for_export(l, b.ops[i]))
        return i > first;
      execute(l, b.ops[i]);
    }
    i = 0;
    ++ran[l];
    for (ag::operand_id id : b.no_hold) {
      released.push_back({l, id});
      mem[l].erase(id);
    }
    r.plan.done(l, b.ops_after(), 0);
    return true;
  }

  std::size_t unrun(uint32_t l) { return dead.count(l) > 0 ? 0 : sent(l) - ran[l]; }

  // Every lane runs everything it is sent, until nothing more comes.
  void run_all() {
    for (int round = 0; round < 1000; ++round) {
      r.drain();
      bool any = false;
      std::size_t left = 0;
      for (uint32_t l = 0; l < r.lanes; ++l)
        while (step(l))
          any = true;
      r.drain();
      for (uint32_t l = 0; l < r.lanes; ++l)
        left += unrun(l);
      if (!any && left == 0)
        return;
    }
    FAIL("the lanes never ran out of work");
  }

  const std::vector<float>& on(uint32_t lane, ag::operand_id id) {
    INFO("operand #" << id << " on lane " << lane);
    auto it = mem[lane].find(id);
    REQUIRE(it != mem[lane].end());
    return it->second;
  }

  rig& r;
  std::map<uint32_t, std::map<ag::operand_id, std::vector<float>>> mem;
  std::map<uint32_t, std::size_t> ran;
  std::map<uint32_t, std::size_t> at; // operators of its next batch run so far
  std::set<uint32_t> dead;
  std::vector<std::pair<uint32_t, ag::operand_id>> released; // in the order they ran
  // Process mode: each child's batches from the broadcasts, and how many broadcasts were read.
  std::map<uint32_t, std::vector<ag::batch>> inbox;
  std::size_t broadcasts_read = 0;
  std::vector<std::pair<uint32_t, ag::operand_id>> exports; // lane, operand: peer_exports run
  std::vector<std::pair<uint32_t, ag::operand_id>> imports; // reader lane, operand: through slots
  std::vector<std::pair<uint32_t, ag::operand_id>> lost_imports; // of exporters that went
  std::map<uint32_t, std::set<uint32_t>> forgotten;         // lane -> lanes it ran peer_forget of
};

// "m+count/n ..." of the operators of lane l that write device operand id (copies and fills).
std::string pieces_into(const rig& r, uint32_t l, ag::operand_id id) {
  std::string s;
  for (const auto& op : r.ops_of(l))
    if (op.out.id == id && !op.out.on_host())
      s += (s.empty() ? "" : " ") + std::to_string(op.m) + "+" + std::to_string(op.count) + "/"
           + std::to_string(op.n);
  return s;
}

// The same for the copies of lane l that read device operand id into the store.
std::string pieces_from(const rig& r, uint32_t l, ag::operand_id id) {
  std::string s;
  for (const auto& op : r.ops_of(l))
    if (op.kind == ag::op_kind::copy && op.a.id == id && !op.a.on_host() && op.out.on_host())
      s += (s.empty() ? "" : " ") + std::to_string(op.m) + "+" + std::to_string(op.count) + "/"
           + std::to_string(op.n);
  return s;
}

std::size_t count_kind(const std::vector<ag::op_desc>& ops, ag::op_kind k) {
  std::size_t n = 0;
  for (const auto& op : ops)
    n += op.kind == k ? 1 : 0;
  return n;
}

bool reads_operand(const std::vector<ag::op_desc>& ops, ag::operand_id id) {
  for (const auto& op : ops)
    if (op.a.id == id || op.b.id == id)
      return true;
  return false;
}

// The store the pressure cases use: 3072 bytes (twelve ranges of 256), so that a chunk of a
// two-part collective is 3072 / 4 / 3 / 4 = 64 elements and its three ranges take 768 bytes.
constexpr std::size_t small_store = 3072;

// #1 = 0, 1, ... on sim:0 and #2 = 1000, 1001, ... on sim:1 (count elements each), uploaded and
// acknowledged: the store is empty again.
void two_device_parts(rig& r, emulator& emu, uint64_t count) {
  r.submit(upload(sim0, 1, ramp(count, 0)));
  r.submit(upload(sim1, 2, ramp(count, 1000)));
  emu.run_all();
  REQUIRE(r.plan.store().live_bytes() == 0);
}

} // namespace

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
          == fields(ag::op_desc{ag::op_kind::fill, {l == sim0 ? 3u : 4u, no_offset}, {}, {}, 32,
                                128, 0, 160}));
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
          == fields(ag::op_desc{ag::op_kind::fill, {3, no_offset}, {}, {}, 64, 64 * i, 0, 320}));
    CHECK(std::isnan(stand_ins[i].scalar));
  }
  CHECK(r.plan.held() == 1); // its ranges free once sim:1 ran the stand-ins

  REQUIRE(emu.step(sim1));
  CHECK(r.plan.held() == 0);
  // The rest of #3 is NaN, so that it is whole on its device.
  const auto& rest = r.plan.lane(sim1).queue;
  REQUIRE(rest.size() == 1);
  CHECK(fields(rest.back().op)
        == fields(ag::op_desc{ag::op_kind::fill, {3, no_offset}, {}, {}, 192, 128, 0, 320}));
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
  // The sum waited for sim:0: it became a NaN fill of the accumulator, sent at once.
  REQUIRE(r.out.batches(cpu) == 1);
  const auto& ops = r.out.runs[cpu][0].ops;
  REQUIRE(ops.size() == 2);
  CHECK(ops[0].kind == ag::op_kind::fill);
  CHECK(std::isnan(ops[0].scalar));
  CHECK(ops[0].out.id == 0);
  CHECK(ops[1].kind == ag::op_kind::copy);
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

// -- direct paths between peer lanes --------------------------------------------------------------

namespace {

constexpr ag::operand_id own_ids = ag::operand_id{1} << 62; // the planner's own operands

// Makes every two lanes of `group` peers of each other (and no others).
ag::planner_setup with_peers(ag::planner_setup s, std::vector<uint32_t> group) {
  const std::size_t n = s.devices.size();
  s.peers.assign(n, std::vector<bool>(n, false));
  for (uint32_t a : group)
    for (uint32_t b : group)
      if (a != b)
        s.peers.at(a).at(b) = true;
  return s;
}

std::string peer_copy_fields(ag::operand_id out, ag::operand_id a, uint64_t count, uint32_t from,
                             uint64_t first = 0, uint64_t total = 0) {
  return fields(ag::op_desc{ag::op_kind::peer_copy, {out, no_offset}, {a, no_offset}, {}, count,
                            first, from, total});
}

std::string peer_sum_fields(ag::operand_id out, uint64_t group, uint64_t count, uint64_t first,
                            uint64_t parts) {
  return fields(
    ag::op_desc{ag::op_kind::peer_sum, {out, no_offset}, {0, group}, {}, count, first, parts, 0});
}

// The k peer_entry records in the store at offset.
std::vector<ag::peer_entry> entries_at(const rig& r, uint64_t offset, uint64_t k) {
  REQUIRE(offset <= r.store.size());
  REQUIRE(k * sizeof(ag::peer_entry) <= r.store.size() - offset);
  std::vector<ag::peer_entry> g(k);
  std::memcpy(g.data(), r.store.data() + offset, k * sizeof(ag::peer_entry));
  return g;
}

// "lane:#id ..." of the k peer_entry records in the store at offset.
std::string group_at(const rig& r, uint64_t offset, uint64_t k) {
  std::string s;
  for (const auto& e : entries_at(r, offset, k))
    s += (s.empty() ? "" : " ") + std::to_string(e.lane) + ":#" + std::to_string(e.id)
         + (e.reserved == 0 ? "" : "(reserved " + std::to_string(e.reserved) + ")");
  return s;
}

std::string ids_str(const std::vector<ag::operand_id>& ids) {
  std::string s;
  for (auto id : ids)
    s += (s.empty() ? "#" : " #") + std::to_string(id);
  return s;
}

bool is_peer_op(const ag::op_desc& op) {
  return op.kind == ag::op_kind::peer_copy || op.kind == ag::op_kind::peer_sum;
}

std::size_t peer_ops(const rig& r) {
  std::size_t n = 0;
  for (uint32_t l = 0; l < r.lanes; ++l)
    for (const auto& op : r.ops_of(l))
      n += is_peer_op(op) ? 1 : 0;
  return n;
}

// True when op reads memory of lane `of` where it lies (a peer_copy from it, a peer_sum whose
// group names it).
bool reads_lane(const rig& r, const ag::op_desc& op, uint32_t of) {
  if (op.kind == ag::op_kind::peer_copy)
    return op.k == of;
  if (op.kind != ag::op_kind::peer_sum)
    return false;
  std::vector<ag::peer_entry> g(op.k);
  REQUIRE(op.a.offset + op.k * sizeof(ag::peer_entry) <= r.store.size());
  std::memcpy(g.data(), r.store.data() + op.a.offset, op.k * sizeof(ag::peer_entry));
  for (const auto& e : g)
    if (e.lane == of)
      return true;
  return false;
}

std::vector<float> concat(const std::vector<std::vector<float>>& parts) {
  std::vector<float> v;
  for (const auto& p : parts)
    v.insert(v.end(), p.begin(), p.end());
  return v;
}

// Part i (i = 0.. of lanes) is #(i + 1) on lanes[i]: ramp(count, 100 * (i + 1)) (or, with
// negative, alternating signs), uploaded and acknowledged: the store is empty again.
std::vector<std::vector<float>> peer_parts(rig& r, emulator& emu, const std::vector<uint32_t>& lanes,
                                           uint64_t count) {
  std::vector<std::vector<float>> parts;
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    parts.push_back(ramp(count, 100.0f * static_cast<float>(i + 1)));
    r.submit(upload(lanes[i], i + 1, parts.back()));
  }
  emu.run_all();
  REQUIRE(r.plan.store().live_bytes() == 0);
  return parts;
}

std::vector<float> sum_all(const std::vector<std::vector<float>>& parts) {
  std::vector<float> v = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i)
    v = sum_of(v, parts[i]);
  return v;
}

void all_queues_empty(const rig& r) {
  for (uint32_t l = 0; l < r.lanes; ++l) {
    INFO("lane " << l);
    CHECK(r.plan.lane(l).queue.empty());
  }
}

} // namespace

// -- exports: every direct read of another lane's operand ----------------------------------------

namespace {

// Peers among the remote lanes of a process-mode setup.
ag::planner_setup remote_peers(std::vector<uint32_t> group, std::size_t store_bytes = 64 << 10,
                               std::size_t lanes = 3) {
  return with_peers(setup_of(store_bytes, true, lanes), std::move(group));
}

std::string export_fields(uint64_t slot, ag::operand_id a, uint64_t count) {
  return fields(
    ag::op_desc{ag::op_kind::peer_export, {0, slot}, {a, no_offset}, {}, count, 0, 0, 0});
}

// A peer_copy from another child: b is the source's export slot.
std::string imported_copy_fields(ag::operand_id out, ag::operand_id a, uint64_t count,
                                 uint32_t from, uint64_t slot, uint64_t first = 0,
                                 uint64_t total = 0) {
  return fields(ag::op_desc{ag::op_kind::peer_copy, {out, no_offset}, {a, no_offset}, {0, slot},
                            count, first, from, total});
}

std::string forget_fields(uint32_t lane) {
  return fields(ag::op_desc{ag::op_kind::peer_forget, {}, {}, {}, 0, 0, lane, 0});
}

std::string dep_str(const ag::dependency& d) {
  return std::to_string(d.lane) + ":" + std::to_string(d.index);
}

// "lane:#id@slot ..." of the k peer_entry records in the store at offset ("@-": no slot).
std::string group_slots_at(const rig& r, uint64_t offset, uint64_t k) {
  std::string s;
  for (const auto& e : entries_at(r, offset, k))
    s += (s.empty() ? "" : " ") + std::to_string(e.lane) + ":#" + std::to_string(e.id) + "@"
         + (e.slot == no_offset ? std::string{"-"} : std::to_string(e.slot));
  return s;
}

std::size_t kind_sent(emulator& emu, uint32_t lanes, ag::op_kind k) {
  std::size_t n = 0;
  for (uint32_t l = 0; l < lanes; ++l)
    n += count_kind(emu.ops_sent(l), k);
  return n;
}

// The ops of the last broadcast's batch for lane l (none: empty).
std::vector<ag::op_desc> last_broadcast_ops(const rig& r, uint32_t l) {
  REQUIRE_FALSE(r.out.broadcasts.empty());
  for (const auto& b : r.out.broadcasts.back().batches)
    if (b.lane == l)
      return b.ops;
  return {};
}

constexpr std::size_t range = ag::store_allocator::alignment; // what one export slot takes

} // namespace

TEST_CASE("a move between peer lanes is a peer_export on the source and one peer_copy through its "
          "slot on the destination, sent at once; the source's release waits for the copy",
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

// -- direct transfers between child processes ------------------------------------------------------

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
