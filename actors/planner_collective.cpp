// The planner's collectives (graph/collective.hpp) over the host store, a chunk at a time: each
// input's chunk is staged in the store (a copy on its lane; a cpu input is there already), the cpu
// lane sums the staged chunks where the collective reduces (in the parts' order), and each
// result's lane copies the chunk in. Nothing waits inside a runner: every cross-lane order is a
// dependency the planner holds, so a lane that fails turns what waited for it into NaN stand-ins
// and taints every result (planner_failure.cpp), and no participant waits for it.
//
// Chunk order: the collective's elements are placed in segments, a chunk never crossing one.
//   all_reduce, broadcast: one segment, the input's elements; result elements = input elements.
//   all_gather: segment r is part r's elements; result elements [r * count, (r + 1) * count).
//   reduce_scatter: segment r is block r of every part; only result r receives it.
// A result's first chunk is its element 0 (the piece that creates it on its device).
#include <algorithm>
#include <limits>
#include <tuple>

#include <unistd.h>

#include "actors/flow_control.hpp"
#include "actors/planner.hpp"
#include "cuda/kernel_stream.hpp"
#include "graph/export_slot.hpp"
#include "ipc/timeline.hpp"
#include "ipc/trace.hpp"

namespace ag {

namespace {

constexpr uint64_t no_offset = operand_ref::no_offset;

bool reduces(collective_kind k) {
  return k == collective_kind::all_reduce || k == collective_kind::reduce_scatter;
}

// Elements of one segment of the chunk order.
uint64_t segment(const collective_request& c) {
  return c.kind == collective_kind::reduce_scatter ? c.out_count() : c.count;
}

// Elements of the whole chunk order.
uint64_t chunk_order_elems(const collective_request& c) {
  return c.kind == collective_kind::all_gather ? c.count * c.parts.size() : c.count;
}

// A copy of n elements; a piece of a `total`-element device operand at `first` unless whole.
op_desc copy_of(operand_ref out, operand_ref a, uint64_t n, uint64_t first, uint64_t total) {
  op_desc op = make_op(op_kind::copy, out, a, {}, n, 0, 0, 0);
  if (n != total) {
    op.m = first;
    op.n = total;
  }
  return op;
}

// A chunk's value in the store, and the operator that writes it.
struct staged_chunk {
  operand_ref ref;
  dependency written;
};

} // namespace

// A collective from a user's thread: held in arrival order, like a transfer in pieces, and placed
// from the head of the held queue as store room allows.
void planner::submit(collective_request& req) {
  held_request h;
  h.what = held_request::kind::collective;
  for (const auto& ids : {req.parts, req.outs})
    for (operand_id id : ids)
      ++held_refs_[id];
  h.coll = std::move(req);
  const bool was_empty = held_.empty();
  held_.push_back(std::move(h));
  if (was_empty)
    drain_held(true);
  schedule_flush();
}

// The elements of one chunk: its staging ranges (one per device input, and the sum) take at most
// a quarter of the store together.
uint64_t planner::chunk_elems(std::size_t parts) const {
  return std::max<uint64_t>(1, store_.capacity() / 4 / (parts + 1) / sizeof(float));
}

// Places the held head's collective as far as store room allows: true once every chunk is placed
// (or the collective failed), false while it waits for room.
bool planner::stream_collective(held_request& h) {
  const auto& c = h.coll;
  if (!h.started) {
    if (auto why = collective_blocker(c); !why.empty()) {
      fail_results(c, why);
      settle_collective(c);
      return true;
    }
    if (direct_group(c)) {
      if (!place_direct(c)) { // no room for a sum's group yet
        const uint64_t bytes = c.parts.size() * sizeof(peer_entry);
        if (may_wait_for_space(bytes))
          return false;
        fail_results(c, store_full(bytes, describe(c)));
        settle_collective(c);
        return true;
      }
      if (trace_)
        trace_->write(trace::collective_rec{c});
      settle_collective(c);
      return true;
    }
    if (!place_results(c))
      return false;
    if (!tensors_.at(c.outs.front()).failure.empty()) { // no room for a cpu result, ever
      settle_collective(c);
      return true;
    }
    h.started = true;
    if (trace_)
      trace_->write(trace::collective_rec{c});
  }
  const uint64_t total = chunk_order_elems(c);
  const uint64_t seg = segment(c);
  const uint64_t chunk = chunk_elems(c.parts.size());
  while (h.streamed < total) {
    if (auto why = failed_participant(c); !why.empty()) {
      lose_rest(c, h.streamed, why);
      break;
    }
    const uint64_t n = std::min(chunk, seg - h.streamed % seg);
    if (!place_chunk(c, h.streamed, n)) {
      const uint64_t bytes = n * sizeof(float) * (c.parts.size() + 1);
      if (may_wait_for_space(bytes))
        return false;
      lose_rest(c, h.streamed, store_full(bytes, "a chunk of " + describe(c)));
      break;
    }
    h.streamed += n;
  }
  if (total == 0) // empty results are still made on their devices
    for (std::size_t q = 0; q < c.outs.size(); ++q)
      if (auto l = *lane_of(c.to[q]); l != cpu_lane && tensors_[c.outs[q]].failure.empty())
        enqueue(l, make_op(op_kind::fill, {c.outs[q], no_offset}, {}, {}, 0, 0, 0, 0));
  auto devices = c.from;
  devices.insert(devices.end(), c.to.begin(), c.to.end());
  note_path(to_string(c.kind), devices, false);
  settle_collective(c);
  return true;
}

// Every result of a collective that will not run: its readers get why (reported once).
void planner::fail_results(const collective_request& c, const std::string& why) {
  for (operand_id out : c.outs) {
    auto& rec = tensors_[out] = tensor_rec{};
    rec.placed = false; // never given memory
    rec.failure = why;
  }
  record(why);
}

// Why the collective cannot start, or empty: an input unknown, tainted or on a failed lane, a
// result's device missing or failed.
std::string planner::collective_blocker(const collective_request& c) const {
  const std::string name = describe(c);
  if (c.parts.empty() || c.parts.size() != c.from.size() || c.outs.size() != c.to.size()
      || c.outs.empty())
    return name + ": malformed request";
  for (operand_id in : c.parts) {
    auto it = tensors_.find(in);
    if (it == tensors_.end())
      return name + ": operand #" + std::to_string(in) + " does not exist";
    if (!it->second.failure.empty())
      return name + ": input #" + std::to_string(in) + " failed: " + it->second.failure;
    if (!lanes_[it->second.lane].failed.empty())
      return name + ": input #" + std::to_string(in) + " is on " + lanes_[it->second.lane].failed;
    if (it->second.bytes != c.count * sizeof(float))
      return name + ": input #" + std::to_string(in) + " holds " + std::to_string(it->second.bytes)
             + " bytes, not " + std::to_string(c.count) + " elements";
  }
  for (const auto& d : c.to) {
    const auto l = lane_of(d);
    if (!l)
      return name + ": " + d.str() + " is not a device of this runtime";
    if (!lanes_[*l].failed.empty())
      return name + ": " + lanes_[*l].failed;
  }
  return {};
}

// The failure of a lane the collective reads from or writes to, or empty.
std::string planner::failed_participant(const collective_request& c) const {
  for (operand_id in : c.parts)
    if (const auto& ln = lanes_[tensors_.at(in).lane]; !ln.failed.empty())
      return describe(c) + ": " + ln.failed;
  for (const auto& d : c.to)
    if (const auto& ln = lanes_[*lane_of(d)]; !ln.failed.empty())
      return describe(c) + ": " + ln.failed;
  return {};
}

// Gives each result its place: a cpu result its whole store range now, a device result its record
// (its first chunk creates it). False, with nothing changed, while the store has no room; true
// with every result tainted when waiting cannot help.
bool planner::place_results(const collective_request& c) {
  const uint64_t bytes = c.out_count() * sizeof(float);
  std::vector<std::pair<operand_id, uint64_t>> ranges;
  for (std::size_t q = 0; q < c.outs.size(); ++q) {
    if (*lane_of(c.to[q]) != cpu_lane)
      continue;
    auto off = store_.allocate(bytes);
    if (!off) {
      for (const auto& r : ranges)
        store_.deallocate(r.second, bytes);
      if (may_wait_for_space(bytes))
        return false;
      fail_results(c, store_full(bytes, describe(c)));
      return true;
    }
    ranges.emplace_back(c.outs[q], *off);
  }
  for (std::size_t q = 0; q < c.outs.size(); ++q)
    tensors_[c.outs[q]] = placed_tensor(*lane_of(c.to[q]), no_offset, bytes);
  for (const auto& [out, off] : ranges)
    tensors_[out].offset = off;
  return true;
}

// Places n elements of the chunk order from element `at`: stages the inputs' chunks, sums them
// when the collective reduces, copies the value into each result that receives it. False, with
// nothing changed, while the store has no room for its staging ranges.
bool planner::place_chunk(const collective_request& c, uint64_t at, uint64_t n) {
  const uint64_t seg = segment(c);
  const uint64_t bytes = n * sizeof(float);
  const bool sum = reduces(c.kind) && c.parts.size() > 1;
  // The inputs this chunk reads, and the first of their elements it reads.
  std::vector<std::size_t> inputs;
  if (reduces(c.kind))
    for (std::size_t i = 0; i < c.parts.size(); ++i)
      inputs.push_back(i);
  else
    inputs.push_back(c.kind == collective_kind::all_gather ? at / seg : 0);
  const uint64_t first = c.kind == collective_kind::all_gather ? at % seg : at;

  std::size_t ranges = sum ? 1 : 0;
  for (std::size_t i : inputs)
    ranges += tensors_.at(c.parts[i]).lane == cpu_lane ? 0 : 1;
  std::vector<uint64_t> got;
  while (got.size() < ranges) {
    auto off = store_.allocate(bytes);
    if (!off) {
      for (uint64_t o : got)
        store_.deallocate(o, bytes);
      return false;
    }
    got.push_back(*off);
  }
  std::size_t next = 0;

  std::vector<staged_chunk> staged;
  for (std::size_t i : inputs) {
    const auto& rec = tensors_.at(c.parts[i]);
    if (rec.lane == cpu_lane) {
      staged.push_back({{0, rec.offset + first * sizeof(float)}, rec.writer});
      continue;
    }
    const uint64_t off = got[next++];
    const op_desc op = copy_of({0, off}, {c.parts[i], no_offset}, n, first, c.count);
    staged.push_back({{0, off}, {rec.lane, enqueue(rec.lane, op, {rec.writer})}});
  }
  staged_chunk value = staged.front();
  if (sum) {
    const operand_ref acc{0, got[next++]};
    op_desc add = make_op(op_kind::add, acc, staged[0].ref, staged[1].ref, n, 0, 0, 0);
    uint64_t index = enqueue(cpu_lane, add, {staged[0].written, staged[1].written});
    for (std::size_t r = 2; r < staged.size(); ++r) {
      add.a = acc;
      add.b = staged[r].ref;
      index = enqueue(cpu_lane, add, {staged[r].written});
    }
    value = {acc, {cpu_lane, index}};
  }

  const uint64_t total = c.out_count();
  const uint64_t out_first = c.kind == collective_kind::reduce_scatter ? at % seg : at;
  for (std::size_t q = 0; q < c.outs.size(); ++q) {
    if (c.kind == collective_kind::reduce_scatter && q != at / seg)
      continue;
    auto& rec = tensors_.at(c.outs[q]);
    if (rec.lane == cpu_lane) {
      const operand_ref dst{c.outs[q], rec.offset + out_first * sizeof(float)};
      rec.writer = {cpu_lane, enqueue(cpu_lane, copy_of(dst, value.ref, n, 0, n), {value.written})};
    } else {
      const op_desc op = copy_of({c.outs[q], no_offset}, value.ref, n, out_first, total);
      rec.writer = {rec.lane, enqueue(rec.lane, op, {value.written})};
    }
  }
  for (uint64_t o : got)
    free_later(o, bytes);
  return true;
}

// The collective stops at element `at` of its chunk order: every result is tainted with why, and
// a device result already made gets NaN for the elements it would still have received, so that
// it is whole (its lane's operand map stays exact).
void planner::lose_rest(const collective_request& c, uint64_t at, const std::string& why) {
  record(why);
  const uint64_t seg = segment(c);
  const uint64_t total = c.out_count();
  for (std::size_t q = 0; q < c.outs.size(); ++q) {
    auto& rec = tensors_.at(c.outs[q]);
    if (rec.failure.empty())
      rec.failure = why;
    if (rec.lane == cpu_lane || !lanes_[rec.lane].failed.empty())
      continue;
    uint64_t made = at; // elements of result q already placed
    if (c.kind == collective_kind::reduce_scatter)
      made = at / seg > q ? seg : at / seg < q ? 0 : at % seg;
    if (made == 0) {
      rec.placed = false; // never created on its device
      continue;
    }
    if (made < total) {
      op_desc nan = make_op(op_kind::fill, {c.outs[q], no_offset}, {}, {}, total - made, made, 0, total);
      nan.scalar = std::numeric_limits<float>::quiet_NaN();
      enqueue(rec.lane, nan);
    }
  }
}

// Gives the user's credit back once the collective's last operator on the lane it was charged to
// (its first result's) has run.
void planner::settle_collective(const collective_request& c) {
  if (!flow_)
    return;
  const auto l = c.to.empty() ? std::nullopt : lane_of(c.to.front());
  if (!l || !lanes_[*l].failed.empty() || lanes_[*l].issued == 0)
    flow_->release(l.value_or(cpu_lane), 1);
  else
    lanes_[*l].credits.push_back({lanes_[*l].issued, *l});
}

// -- direct paths ---------------------------------------------------------------------------------

// Every input and result is on a device lane of this process, each a peer of the others: the
// collective reads the inputs where they lie.
bool planner::direct_group(const collective_request& c) const {
  // Without peers, this process's runners share no directory (even for a group of one).
  if (peers_.empty() || c.parts.size() > kernel_stream::max_peer_parts)
    return false;
  // One result per part, on its device (the API's groups; the two-shot blocks lie on them).
  if (c.kind != collective_kind::broadcast && c.to != c.from)
    return false;
  std::vector<uint32_t> group;
  for (operand_id in : c.parts)
    group.push_back(tensors_.at(in).lane);
  for (const auto& d : c.to)
    group.push_back(*lane_of(d));
  for (uint32_t a : group)
    for (uint32_t b : group)
      if (a != b && !peer(a, b))
        return false;
  return std::find(group.begin(), group.end(), cpu_lane) == group.end();
}

// The group of a peer_sum, in the store: every input's lane and id, in order. Empty while the
// store has no room for it.
std::optional<uint64_t> planner::write_group(const collective_request& c) {
  std::vector<peer_entry> group;
  for (operand_id in : c.parts) {
    const auto& rec = tensors_.at(in);
    group.push_back({rec.lane, 0, in, rec.export_slot}); // its own lane reads it in place
  }
  const uint64_t bytes = group.size() * sizeof(peer_entry);
  auto off = store_.allocate(bytes);
  if (!off)
    return std::nullopt;
  store_upload(0, *off, reinterpret_cast<const char*>(group.data()), bytes);
  return off;
}

// Places a collective over peer lanes in one go: false, with nothing changed, while the store has
// no room for a sum's group (a few bytes).
//   all_reduce, up to one_shot_bytes: every lane sums every peer's whole part (one-shot);
//     larger: lane r sums block r of every part, then every lane gathers the blocks (two-shot).
//   reduce_scatter: lane r sums block r of every part into its result.
//   all_gather: every lane copies each peer's part into its slice of the result.
//   broadcast: every destination copies the source.
bool planner::place_direct(const collective_request& c) {
  const uint64_t w = c.parts.size();
  const bool sums = reduces(c.kind) && c.count > 0;
  const bool two_shot = c.kind == collective_kind::all_reduce
                        && c.count * sizeof(float) > one_shot_bytes_ && w > 1;
  // Lanes read each other's parts (and two-shot blocks) through exports: their slots first, all
  // or none, then the group that names them.
  std::vector<uint64_t> block_slots;
  const std::vector<operand_id> exported = w > 1 || c.kind == collective_kind::broadcast
                                             ? c.parts
                                             : std::vector<operand_id>{};
  if (!export_all(exported, two_shot ? w : 0, block_slots))
    return false; // no room yet: wait (a deadline follows, as for any held head)
  std::optional<uint64_t> group;
  if (sums && !(group = write_group(c))) {
    for (uint64_t s : block_slots) // the exports stay: they serve until their operands go
      store_.deallocate(s, sizeof(export_slot));
    return false;
  }
  const uint64_t total = c.out_count();
  auto lane_out = [&](std::size_t q) { return *lane_of(c.to[q]); };
  for (std::size_t q = 0; q < c.outs.size(); ++q)
    tensors_[c.outs[q]] = placed_tensor(lane_out(q), no_offset, total * sizeof(float));
  if (total == 0 || c.count == 0) {
    for (std::size_t q = 0; q < c.outs.size(); ++q)
      tensors_[c.outs[q]].writer = {
        lane_out(q),
        enqueue(lane_out(q), make_op(op_kind::fill, {c.outs[q], no_offset}, {}, {}, 0, 0, 0, 0))};
  } else if (c.kind == collective_kind::broadcast || c.kind == collective_kind::all_gather) {
    for (std::size_t q = 0; q < c.outs.size(); ++q) {
      const uint32_t l = lane_out(q);
      for (std::size_t r = 0; r < c.parts.size(); ++r) {
        op_desc op = make_op(op_kind::peer_copy, {c.outs[q], no_offset}, {c.parts[r], no_offset}, {},
                   c.count, 0, tensors_.at(c.parts[r]).lane, 0);
        if (c.kind == collective_kind::all_gather) { // a piece: slice r of the result
          op.m = r * c.count;
          op.n = total;
        }
        tensors_[c.outs[q]].writer = {l, read_directly(l, op, {c.parts[r]})};
      }
    }
  } else if (c.kind == collective_kind::reduce_scatter
             || c.count * sizeof(float) > one_shot_bytes_) {
    // Block r of the sum, on lane r: the result (reduce_scatter) or a block of the planner's own.
    const bool scatter = c.kind == collective_kind::reduce_scatter;
    const uint64_t block = scatter ? total : (c.count + w - 1) / w;
    std::vector<operand_id> blocks;
    std::vector<uint32_t> block_lanes;
    for (std::size_t r = 0; r < w && r * block < c.count; ++r) {
      const uint32_t l = lane_out(r);
      const uint64_t n = std::min(block, c.count - r * block);
      const operand_id id = scatter ? c.outs[r] : next_own_id_++;
      const op_desc op = make_op(op_kind::peer_sum, {id, no_offset}, {0, *group}, {}, n, r * block, w, 0);
      const dependency written{l, read_directly(l, op, c.parts)};
      if (!scatter)
        tensors_[id] = placed_tensor(l, no_offset, n * sizeof(float), written);
      tensors_[id].writer = written;
      if (!scatter && r < block_slots.size())
        export_operand(id, block_slots[r]); // the other lanes gather it
      blocks.push_back(id);
      block_lanes.push_back(l);
    }
    for (std::size_t r = 0; r < block_slots.size(); ++r) // slots no block took
      if (r >= blocks.size() || tensors_.at(blocks[r]).export_slot != block_slots[r])
        store_.deallocate(block_slots[r], sizeof(export_slot));
    if (!scatter)
      gather_blocks(c, blocks, block_lanes); // which releases the blocks
  } else { // one-shot all_reduce
    for (std::size_t q = 0; q < c.outs.size(); ++q) {
      const uint32_t l = lane_out(q);
      const op_desc op = make_op(op_kind::peer_sum, {c.outs[q], no_offset}, {0, *group}, {}, c.count, 0, w, 0);
      tensors_[c.outs[q]].writer = {l, read_directly(l, op, c.parts)};
    }
  }
  if (group)
    free_later(*group, w * sizeof(peer_entry));
  auto devices = c.from;
  devices.insert(devices.end(), c.to.begin(), c.to.end());
  note_path(to_string(c.kind), devices, true);
  return true;
}

// The two-shot all_reduce's second half: every lane copies each block into its result, then the
// blocks go once every copy of them ran.
void planner::gather_blocks(const collective_request& c, const std::vector<operand_id>& blocks,
                            const std::vector<uint32_t>& block_lanes) {
  const uint64_t block = (c.count + c.parts.size() - 1) / c.parts.size();
  for (std::size_t q = 0; q < c.outs.size(); ++q) {
    const uint32_t l = *lane_of(c.to[q]);
    for (std::size_t r = 0; r < blocks.size(); ++r) {
      const uint64_t n = tensors_.at(blocks[r]).bytes / sizeof(float);
      const op_desc op = make_op(op_kind::peer_copy, {c.outs[q], no_offset}, {blocks[r], no_offset}, {},
                       n, r * block, block_lanes[r], c.count);
      tensors_[c.outs[q]].writer = {l, read_directly(l, op, {blocks[r]})};
    }
  }
  for (operand_id id : blocks)
    drop(id); // released on its lane after its readers
}

// The timeline says which path a transfer between devices took, and, through the store, why not
// a direct one.
void planner::note_path(const std::string& what, const std::vector<device>& devices, bool direct) {
  if (!timeline_)
    return;
  std::vector<timeline::arg> args{{"path", direct ? "peer" : "store"}};
  if (!direct)
    args.push_back({"why", no_direct_path(devices)});
  const auto now = timeline::clock::now();
  timeline_->span(::getpid(), 0, what, "transfer", now, now, std::move(args));
}

// Why devices have no direct path between them.
std::string planner::no_direct_path(const std::vector<device>& devices) const {
  for (const auto& d : devices) {
    const auto l = lane_of(d);
    if (!l || *l == cpu_lane)
      return "the cpu takes part (its tensors live in the store)";
    if (lanes_[*l].remote && d.type != device::kind::cuda)
      return d.str() + " runs in a child process (only CUDA memory is shared between processes)";
    if (!d.local())
      return d.str() + " is on another machine";
  }
  std::vector<device> distinct = devices;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (const auto& a : distinct)
    for (const auto& b : distinct)
      if (a != b && !peer(*lane_of(a), *lane_of(b))) {
        if (a.type == device::kind::sim && b.type == device::kind::sim)
          return a.str() + " and " + b.str()
                 + " are not peers (sim devices are peers with graph_option::sim_peers)";
        if (a.type != b.type)
          return a.str() + " and " + b.str() + " are different kinds of device";
        return "no peer access between " + a.str() + " and " + b.str();
      }
  if (distinct.size() > kernel_stream::max_peer_parts)
    return std::to_string(distinct.size()) + " devices (a direct collective takes at most "
           + std::to_string(kernel_stream::max_peer_parts) + ")";
  return "no direct path";
}
} // namespace ag
