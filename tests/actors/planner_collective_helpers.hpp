// What the planner's collective tests (store path, peers, remote peers) share: an emulator running
// each lane's operators over the rig (planner_rig.hpp), and the requests and checks they build.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "actors/planner.hpp"
#include "graph/collective.hpp"
#include "graph/export_slot.hpp"
#include "tests/actors/planner_rig.hpp"

namespace ag::test {

// -- beside the rig (tests/actors/planner_rig.hpp) ------------------------------------------------

inline constexpr uint32_t sim2 = 3; // lanes of a setup_of with more lanes
// What the emulator gives a device operand's elements first.
inline constexpr float unwritten = -12345.0f;

inline std::string add_fields(ag::operand_ref out, ag::operand_ref a, ag::operand_ref b,
                              uint64_t count) {
  return fields(ag::make_op(ag::op_kind::add, out, a, b, count, 0, 0, 0));
}

inline std::string deps_str(const std::vector<ag::dependency>& deps) {
  std::string s;
  for (const auto& d : deps)
    s += (s.empty() ? "" : " ") + std::to_string(d.lane) + ":" + std::to_string(d.index);
  return s;
}

inline ag::collective_request collective(ag::collective_kind kind,
                                         std::vector<ag::operand_id> parts,
                                         std::vector<uint32_t> from,
                                         std::vector<ag::operand_id> outs,
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
inline std::vector<float> ramp(std::size_t n, float base) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = base + static_cast<float>(i);
  return v;
}

inline std::vector<float> sum_of(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  std::vector<float> v(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    v[i] = a[i] + b[i];
  return v;
}

inline std::vector<float> slice(const std::vector<float>& v, std::size_t first, std::size_t n) {
  REQUIRE(first + n <= v.size());
  return std::vector<float>(v.begin() + first, v.begin() + first + n);
}

inline bool all_nan(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isnan(x))
      return false;
  return true;
}

// -- the emulated runners -------------------------------------------------------------------------

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
        REQUIRE(op.type == ag::dtype::uint8); // it exports the operand's bytes
        REQUIRE(src->second.size() * sizeof(float) == op.count);
        ag::export_slot x;
        x.bytes = op.count;
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
inline std::string pieces_into(const rig& r, uint32_t l, ag::operand_id id) {
  std::string s;
  for (const auto& op : r.ops_of(l))
    if (op.out.id == id && !op.out.on_host())
      s += (s.empty() ? "" : " ") + std::to_string(op.m) + "+" + std::to_string(op.count) + "/"
           + std::to_string(op.n);
  return s;
}

// The same for the copies of lane l that read device operand id into the store.
inline std::string pieces_from(const rig& r, uint32_t l, ag::operand_id id) {
  std::string s;
  for (const auto& op : r.ops_of(l))
    if (op.kind == ag::op_kind::copy && op.a.id == id && !op.a.on_host() && op.out.on_host())
      s += (s.empty() ? "" : " ") + std::to_string(op.m) + "+" + std::to_string(op.count) + "/"
           + std::to_string(op.n);
  return s;
}

inline std::size_t count_kind(const std::vector<ag::op_desc>& ops, ag::op_kind k) {
  std::size_t n = 0;
  for (const auto& op : ops)
    n += op.kind == k ? 1 : 0;
  return n;
}

inline bool reads_operand(const std::vector<ag::op_desc>& ops, ag::operand_id id) {
  for (const auto& op : ops)
    if (op.a.id == id || op.b.id == id)
      return true;
  return false;
}

// The store the pressure cases use: 3072 bytes (twelve ranges of 256), so that a chunk of a
// two-part collective is 3072 / 4 / 3 / 4 = 64 elements and its three ranges take 768 bytes.
inline constexpr std::size_t small_store = 3072;

// #1 = 0, 1, ... on sim:0 and #2 = 1000, 1001, ... on sim:1 (count elements each), uploaded and
// acknowledged: the store is empty again.
inline void two_device_parts(rig& r, emulator& emu, uint64_t count) {
  r.submit(upload(sim0, 1, ramp(count, 0)));
  r.submit(upload(sim1, 2, ramp(count, 1000)));
  emu.run_all();
  REQUIRE(r.plan.store().live_bytes() == 0);
}

// -- direct paths between peer lanes --------------------------------------------------------------

inline constexpr ag::operand_id own_ids = ag::operand_id{1} << 62; // the planner's own operands

// Makes every two lanes of `group` peers of each other (and no others).
inline ag::planner_setup with_peers(ag::planner_setup s, std::vector<uint32_t> group) {
  const std::size_t n = s.devices.size();
  s.peers.assign(n, std::vector<bool>(n, false));
  for (uint32_t a : group)
    for (uint32_t b : group)
      if (a != b)
        s.peers.at(a).at(b) = true;
  return s;
}

inline std::string peer_copy_fields(ag::operand_id out, ag::operand_id a, uint64_t count,
                                    uint32_t from, uint64_t first = 0, uint64_t total = 0) {
  return fields(ag::make_op(ag::op_kind::peer_copy, {out, no_offset}, {a, no_offset}, {}, count,
                            first, from, total));
}

inline std::string peer_sum_fields(ag::operand_id out, uint64_t group, uint64_t count,
                                   uint64_t first, uint64_t parts) {
  return fields(
    ag::make_op(ag::op_kind::peer_sum, {out, no_offset}, {0, group}, {}, count, first, parts, 0));
}

// The k peer_entry records in the store at offset.
inline std::vector<ag::peer_entry> entries_at(const rig& r, uint64_t offset, uint64_t k) {
  REQUIRE(offset <= r.store.size());
  REQUIRE(k * sizeof(ag::peer_entry) <= r.store.size() - offset);
  std::vector<ag::peer_entry> g(k);
  std::memcpy(g.data(), r.store.data() + offset, k * sizeof(ag::peer_entry));
  return g;
}

// "lane:#id ..." of the k peer_entry records in the store at offset.
inline std::string group_at(const rig& r, uint64_t offset, uint64_t k) {
  std::string s;
  for (const auto& e : entries_at(r, offset, k))
    s += (s.empty() ? "" : " ") + std::to_string(e.lane) + ":#" + std::to_string(e.id)
         + (e.reserved == 0 ? "" : "(reserved " + std::to_string(e.reserved) + ")");
  return s;
}

inline std::string ids_str(const std::vector<ag::operand_id>& ids) {
  std::string s;
  for (auto id : ids)
    s += (s.empty() ? "#" : " #") + std::to_string(id);
  return s;
}

inline bool is_peer_op(const ag::op_desc& op) {
  return op.kind == ag::op_kind::peer_copy || op.kind == ag::op_kind::peer_sum;
}

inline std::size_t peer_ops(const rig& r) {
  std::size_t n = 0;
  for (uint32_t l = 0; l < r.lanes; ++l)
    for (const auto& op : r.ops_of(l))
      n += is_peer_op(op) ? 1 : 0;
  return n;
}

// True when op reads memory of lane `of` where it lies (a peer_copy from it, a peer_sum whose
// group names it).
inline bool reads_lane(const rig& r, const ag::op_desc& op, uint32_t of) {
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

inline std::vector<float> concat(const std::vector<std::vector<float>>& parts) {
  std::vector<float> v;
  for (const auto& p : parts)
    v.insert(v.end(), p.begin(), p.end());
  return v;
}

// Part i (i = 0.. of lanes) is #(i + 1) on lanes[i]: ramp(count, 100 * (i + 1)) (or, with
// negative, alternating signs), uploaded and acknowledged: the store is empty again.
inline std::vector<std::vector<float>> peer_parts(rig& r, emulator& emu,
                                                  const std::vector<uint32_t>& lanes,
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

inline std::vector<float> sum_all(const std::vector<std::vector<float>>& parts) {
  std::vector<float> v = parts.front();
  for (std::size_t i = 1; i < parts.size(); ++i)
    v = sum_of(v, parts[i]);
  return v;
}

inline void all_queues_empty(const rig& r) {
  for (uint32_t l = 0; l < r.lanes; ++l) {
    INFO("lane " << l);
    CHECK(r.plan.lane(l).queue.empty());
  }
}

// -- exports: every direct read of another lane's operand ----------------------------------------

// Peers among the remote lanes of a process-mode setup.
inline ag::planner_setup remote_peers(std::vector<uint32_t> group,
                                      std::size_t store_bytes = 64 << 10, std::size_t lanes = 3) {
  return with_peers(setup_of(store_bytes, true, lanes), std::move(group));
}

// An export of an operand of `count` floats: its bytes.
inline std::string export_fields(uint64_t slot, ag::operand_id a, uint64_t count) {
  return fields(ag::make_op(ag::op_kind::peer_export, {0, slot}, {a, no_offset}, {},
                            count * sizeof(float), 0, 0, 0));
}

// A peer_copy from another child: b is the source's export slot.
inline std::string imported_copy_fields(ag::operand_id out, ag::operand_id a, uint64_t count,
                                        uint32_t from, uint64_t slot, uint64_t first = 0,
                                        uint64_t total = 0) {
  return fields(ag::make_op(ag::op_kind::peer_copy, {out, no_offset}, {a, no_offset}, {0, slot},
                            count, first, from, total));
}

inline std::string forget_fields(uint32_t lane) {
  return fields(ag::make_op(ag::op_kind::peer_forget, {}, {}, {}, 0, 0, lane, 0));
}

inline std::string dep_str(const ag::dependency& d) {
  return std::to_string(d.lane) + ":" + std::to_string(d.index);
}

// "lane:#id@slot ..." of the k peer_entry records in the store at offset ("@-": no slot).
inline std::string group_slots_at(const rig& r, uint64_t offset, uint64_t k) {
  std::string s;
  for (const auto& e : entries_at(r, offset, k))
    s += (s.empty() ? "" : " ") + std::to_string(e.lane) + ":#" + std::to_string(e.id) + "@"
         + (e.slot == no_offset ? std::string{"-"} : std::to_string(e.slot));
  return s;
}

inline std::size_t kind_sent(emulator& emu, uint32_t lanes, ag::op_kind k) {
  std::size_t n = 0;
  for (uint32_t l = 0; l < lanes; ++l)
    n += count_kind(emu.ops_sent(l), k);
  return n;
}

// The ops of the last broadcast's batch for lane l (none: empty).
inline std::vector<ag::op_desc> last_broadcast_ops(const rig& r, uint32_t l) {
  REQUIRE_FALSE(r.out.broadcasts.empty());
  for (const auto& b : r.out.broadcasts.back().batches)
    if (b.lane == l)
      return b.ops;
  return {};
}

inline constexpr std::size_t range = ag::store_allocator::alignment; // what one export slot takes

} // namespace ag::test
