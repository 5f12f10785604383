// The planner's placement: which lane runs an operator, where its result lives, and the store
// ranges that carry host data (uploads, moves through the host, reads of large device tensors).
#include <algorithm>
#include <cstring>
#include <limits>
#include <tuple>

#include "actors/planner.hpp"
#include "graph/deadline.hpp"
#include "graph/export_slot.hpp"
#include "ipc/trace.hpp"

namespace ag {

namespace {

// A copy of `count` elements of t from operand ref `a` to `out`; with `total`, elements
// [first, first + count) of a `total`-element device operand (docs/PROTOCOL.md, copy).
op_desc copy_op(dtype t, operand_ref out, operand_ref a, uint64_t count, uint64_t first = 0,
                uint64_t total = 0) {
  op_desc op = make_op(op_kind::copy, out, a, {}, count, first, 0, total);
  op.type = t;
  op.in_type = t;
  return op;
}

constexpr uint64_t no_offset = operand_ref::no_offset;

} // namespace

// Places one operator and settles its credit; false (nothing changed) while it waits for space.
bool planner::try_submit(op_request& req) {
  const auto l = lane_of(req.where);
  placement p;
  if (auto why = blocker(req, l); !why.empty()) {
    taint(req.out, std::move(why));
    if (req.staged != no_offset) // its values go nowhere
      store_.deallocate(req.staged, req.bytes());
  } else {
    p = place(*l, req);
  }
  if (p.no_space)
    return false;
  settle(req, l, p.retire);
  return true;
}

placement planner::place(uint32_t l, op_request& req) {
  const uint64_t bytes = req.bytes();
  switch (req.kind) {
    case op_kind::upload: return upload(l, req, bytes);
    case op_kind::copy: return move(l, req, bytes);
    default: return compute(l, req);
  }
}

// Writes upload data to the store (and to the trace, which replays it).
void planner::store_upload(operand_id out, uint64_t offset, const char* data, uint64_t bytes) {
  // An empty vector's data() may be null, which memcpy must not get; staged values lie there.
  if (bytes > 0 && data != reinterpret_cast<const char*>(store_base_) + offset)
    std::memcpy(store_base_ + offset, data, bytes);
  if (trace_) {
    trace::store_write_rec rec{out, offset, {}};
    rec.data.assign(data, data + bytes);
    trace_->write(rec);
  }
}

placement planner::upload(uint32_t l, op_request& req, uint64_t bytes) {
  std::optional<uint64_t> off;
  if (req.staged != no_offset) { // the user's thread wrote the values there
    off = req.staged;
    store_upload(req.out, *off, reinterpret_cast<const char*>(store_base_) + *off, bytes);
  } else {
    off = store_.allocate(bytes);
    if (!off)
      return no_space(req.out, bytes, "from_vector -> #" + std::to_string(req.out));
    store_upload(req.out, *off, req.data.data(), bytes);
  }
  if (l == cpu_lane) {
    tensors_[req.out] = placed_tensor(cpu_lane, *off, bytes, {});
    return {};
  }
  const uint64_t index = enqueue(l, copy_op(req.type, {req.out, no_offset}, {0, *off}, req.count));
  tensors_[req.out] = placed_tensor(l, no_offset, bytes, {l, index});
  free_later(*off, bytes);
  return {false, {l, index}};
}

// An explicit move: the source writes the store, the destination reads it once the source
// acknowledged (the dependency holds the destination's half back).
placement planner::move(uint32_t dst, op_request& req, uint64_t bytes) {
  const tensor_rec src = tensors_.at(req.a);
  if (peer(dst, src.lane))
    return direct_move(dst, req, bytes);
  if (src.lane == cpu_lane) { // store -> device
    const uint64_t index =
      enqueue(dst, copy_op(req.type, {req.out, no_offset}, {req.a, src.offset}, req.count),
              {src.writer});
    tensors_[req.out] = placed_tensor(dst, no_offset, bytes, {dst, index});
    return {false, {dst, index}};
  }
  auto off = store_.allocate(bytes);
  if (!off)
    return no_space(req.out, bytes, "to(" + req.where.str() + ") -> #" + std::to_string(req.out));
  const operand_ref staged{dst == cpu_lane ? req.out : 0, *off};
  const dependency written{
    src.lane, enqueue(src.lane, copy_op(req.type, staged, {req.a, no_offset}, req.count))};
  if (dst == cpu_lane) { // device -> store: the store range is the cpu tensor
    tensors_[req.out] = placed_tensor(cpu_lane, *off, bytes, written);
    return {false, written};
  }
  // device -> staging range -> device
  note_path("to", {lanes_[src.lane].dev, req.where}, false);
  const uint64_t index =
    enqueue(dst, copy_op(req.type, {req.out, no_offset}, {0, *off}, req.count), {written});
  tensors_[req.out] = placed_tensor(dst, no_offset, bytes, {dst, index});
  free_later(*off, bytes);
  return {false, {dst, index}};
}

// Between peer lanes: the destination copies the source operand where it lies, once its writer
// ran (a child's operand: once its child exported it); the source's release waits for the copy
// (tensor_rec::readers).
placement planner::direct_move(uint32_t dst, op_request& req, uint64_t bytes) {
  std::vector<uint64_t> none;
  if (!export_all({req.a}, 0, none))
    return no_space(req.out, sizeof(export_slot), "the export of #" + std::to_string(req.a));
  const auto& src = tensors_.at(req.a);
  op_desc op = make_op(op_kind::peer_copy, {req.out, no_offset}, {req.a, no_offset}, {}, req.count,
             0, src.lane, 0);
  op.type = op.in_type = req.type;
  const uint64_t index = read_directly(dst, op, {req.a});
  note_path("to", {lanes_[src.lane].dev, req.where}, true);
  tensors_[req.out] = placed_tensor(dst, no_offset, bytes, {dst, index});
  return {false, {dst, index}};
}

// -- exports (direct reads of another lane's operand) ----------------------------------------------

// A direct read on lane `reader` of rec, another device lane's operand: through its export, which
// orders the read after its writer by the exporter's event (graph/export_slot.hpp): a peer lane of
// this process finds the operand in the peer directory, another child maps it (CUDA IPC).
bool planner::reads_export(uint32_t reader, const tensor_rec& rec) const {
  return rec.lane != reader && rec.lane != cpu_lane;
}

// What a direct read on lane `reader` of rec waits for: its export sent (the reader's runner and
// stream wait for the rest: graph/export_slot.hpp), or its writer run.
dependency planner::source_dep(uint32_t reader, const tensor_rec& rec) const {
  if (!reads_export(reader, rec))
    return rec.writer;
  dependency d = rec.exported;
  d.sent = true;
  return d;
}

// Exports every device operand of `ids` that is not exported yet, and takes `extra`
// more slots (for operands about to be made); all or none: false, with nothing changed, while the
// store has no room for them.
bool planner::export_all(const std::vector<operand_id>& ids, std::size_t extra,
                         std::vector<uint64_t>& extra_slots) {
  std::vector<operand_id> to_export;
  for (operand_id id : ids) {
    const auto& rec = tensors_.at(id);
    if (rec.lane != cpu_lane && rec.export_slot == no_offset
        && std::find(to_export.begin(), to_export.end(), id) == to_export.end())
      to_export.push_back(id);
  }
  std::vector<uint64_t> got;
  while (got.size() < to_export.size() + extra) {
    auto off = store_.allocate(sizeof(export_slot));
    if (!off) {
      for (uint64_t o : got)
        store_.deallocate(o, sizeof(export_slot));
      return false;
    }
    got.push_back(*off);
  }
  for (std::size_t i = 0; i < to_export.size(); ++i)
    export_operand(to_export[i], got[i]);
  extra_slots.assign(got.begin() + static_cast<std::ptrdiff_t>(to_export.size()), got.end());
  return true;
}

// Its lane writes the operand's export into `slot`, after the operator that made it; the slot
// goes once the operand is released and its readers ran. A slot used before is cleared here,
// before the export is sent: its earlier readers have run, and its new ones must not find it
// ready.
void planner::export_operand(operand_id id, uint64_t slot) {
  if (store_base_ != nullptr)
    export_slots::clear(store_base_ + slot);
  auto& rec = tensors_.at(id);
  op_desc op = make_op(op_kind::peer_export, {0, slot}, {id, no_offset}, {}, rec.bytes, 0, 0, 0);
  op.type = op.in_type = dtype::uint8; // the operand's bytes
  rec.export_slot = slot;
  rec.exported = {rec.lane, enqueue(rec.lane, op)};
}

// Enqueues a direct transfer on lane l that reads `sources` where they lie: after each one's
// export is sent (its own lane's: after its writer, in stream order), and before each one's
// release (its readers). A peer_copy of another lane's operand names its export. Returns the
// operator's index.
uint64_t planner::read_directly(uint32_t l, op_desc op, const std::vector<operand_id>& sources) {
  auto& ln = lanes_[l];
  entry e;
  for (operand_id id : sources) {
    const auto& rec = tensors_.at(id);
    if (const auto d = source_dep(l, rec); d.lane != l && d.index > 0)
      e.deps.push_back(d);
    if (op.kind == op_kind::peer_copy && reads_export(l, rec))
      op.b = {0, rec.export_slot};
  }
  e.op = op;
  e.sources = sources;
  for (operand_id id : sources)
    e.source_lanes.push_back(tensors_.at(id).lane);
  ln.queue.push_back(std::move(e));
  ++ln.entries;
  const uint64_t index = ++ln.issued;
  for (operand_id id : sources) {
    add_reader(tensors_.at(id), {l, index});
    note_direct_read({l, index}, tensors_.at(id), op.out.id);
  }
  return index;
}

// A read of another lane's operand is watched until it ran (fail_lane).
void planner::note_direct_read(dependency reader, const tensor_rec& source, operand_id out) {
  if (!reads_export(reader.lane, source))
    return;
  auto& v = direct_reads_;
  // Those that ran are forgotten once the list has doubled since the last sweep: O(1) amortised a
  // read however many are queued.
  if (v.size() >= direct_reads_sweep_at_) {
    v.erase(std::remove_if(v.begin(), v.end(),
                           [this](const direct_read& r) {
                             return lanes_[r.reader.lane].done >= r.reader.index
                                    || !lanes_[r.reader.lane].failed.empty();
                           }),
            v.end());
    direct_reads_sweep_at_ = std::max<std::size_t>(64, 2 * v.size());
  }
  v.push_back({reader, source.lane, out, source.exported, source.export_slot});
}

// Records a direct reader of rec: the latest of each lane, which runs after that lane's earlier
// ones, so a tensor read again and again keeps at most one a lane (not one a read).
void planner::add_reader(tensor_rec& rec, dependency reader) {
  for (auto& d : rec.readers)
    if (d.lane == reader.lane) {
      d.index = std::max(d.index, reader.index);
      return;
    }
  rec.readers.push_back(reader);
}

// Lane a may read lane b's operands where they lie (both device lanes of this process, peers).
bool planner::peer(uint32_t a, uint32_t b) const {
  return a != cpu_lane && b != cpu_lane && a < peers_.size() && b < peers_[a].size() && peers_[a][b];
}

placement planner::compute(uint32_t l, op_request& req) {
  op_desc op;
  op.kind = req.kind;
  op.count = req.count;
  op.m = req.m;
  op.k = req.k;
  op.n = req.n;
  op.scalar = req.scalar;
  op.scalar2 = req.scalar2;
  op.type = req.type;
  op.in_type = req.in_type;
  op.layout = req.layout; // a copy: req is held and placed again while the store is full
  dependency deps[3]; // the writers of a, b and c (index 0: nothing to wait for)
  for (auto [id, ref, dep] :
       {std::tuple{req.a, &op.a, &deps[0]}, std::tuple{req.b, &op.b, &deps[1]},
        std::tuple{req.c, &op.c, &deps[2]}}) {
    if (id == 0)
      continue;
    const auto& rec = tensors_.at(id);
    *ref = {id, rec.offset};
    *dep = rec.writer;
  }
  const uint64_t bytes = req.bytes();
  op.out = {req.out, no_offset};
  if (l == cpu_lane) {
    auto off = store_.allocate(bytes);
    if (!off)
      return no_space(req.out, bytes, op_name(req));
    op.out.offset = *off;
  }
  const uint64_t index = enqueue(l, op, {deps[0], deps[1], deps[2]});
  tensors_[req.out] = placed_tensor(l, op.out.offset, bytes, {l, index});
  return {false, {l, index}};
}

// -- transfers in pieces --------------------------------------------------------------------------

// Transfers larger than half the store go through it a quarter of it at a time.
bool planner::piecewise(const op_request& req) const {
  if (req.bytes() <= store_.capacity() / 2 || req.where.is_cpu() || req.staged != no_offset)
    return false;
  if (req.kind == op_kind::upload)
    return true;
  if (req.kind != op_kind::copy)
    return false;
  auto it = tensors_.find(req.a);
  const auto dst = lane_of(req.where);
  return it != tensors_.end() && it->second.lane != cpu_lane
         && !(dst && peer(*dst, it->second.lane)); // a direct move needs no store
}

uint64_t planner::piece_elems(dtype t) const {
  return std::max<uint64_t>(1, store_.capacity() / 4 / size_of(t));
}

// Places as many pieces of the held head's transfer as the store has room for; true once every
// piece is placed (or the transfer failed), false while it waits for room.
bool planner::stream_pieces(held_request& h) {
  auto& req = h.req;
  const auto l = lane_of(req.where);
  if (h.streamed == 0) {
    if (auto why = blocker(req, l); !why.empty()) {
      taint(req.out, std::move(why));
      settle(req, l, {});
      return true;
    }
    tensors_[req.out] = placed_tensor(*l, no_offset, req.bytes(), {});
    if (req.kind == op_kind::copy)
      note_path("to", {lanes_[tensors_.at(req.a).lane].dev, req.where}, false);
  }
  const uint32_t dst = *l;
  dependency last{dst, lanes_[dst].issued};
  while (h.streamed < req.count && lanes_[dst].failed.empty()) { // else its operand is gone too
    const auto piece = stream_piece(h, dst);
    if (!piece)
      return false;
    last = *piece;
  }
  tensors_[req.out].writer = last;
  // A failed destination gave its credits back already; nothing of it will be acknowledged.
  settle(req, l, lanes_[dst].failed.empty() ? last : dependency{});
  req.data = {};
  return true;
}

// The next piece of the held head's transfer to lane dst: elements [streamed, streamed + n) go
// through a store range (or, when the source failed or the store stays full, the destination's
// elements become NaN, so that it is whole). Returns the destination's operator, or nothing while
// the store has no room yet.
std::optional<dependency> planner::stream_piece(held_request& h, uint32_t dst) {
  auto& req = h.req;
  const bool upload = req.kind == op_kind::upload;
  const uint64_t n = std::min(piece_elems(req.type), req.count - h.streamed);
  const uint64_t elem = size_of(req.type);
  const operand_ref whole{req.out, no_offset};
  std::string lost; // why the rest of the destination is NaN
  const tensor_rec src = upload ? tensor_rec{} : tensors_.at(req.a);
  if (!upload && !lanes_[src.lane].failed.empty())
    lost = lanes_[src.lane].failed;
  std::optional<uint64_t> off;
  if (lost.empty()) {
    off = store_.allocate(n * elem);
    if (!off && !frees_.empty() && !store_wait_over_)
      return std::nullopt;
    if (!off)
      lost = store_full(n * elem, "a piece of " + op_name(req));
  }
  if (!lost.empty()) {
    if (tensors_[req.out].failure.empty()) {
      tensors_[req.out].failure = lost;
      record(lost);
    }
    op_desc nan = copy_op(req.type, whole, {}, n, h.streamed, req.count);
    nan.kind = op_kind::fill;
    nan.scalar = std::numeric_limits<double>::quiet_NaN();
    h.streamed += n;
    return dependency{dst, enqueue(dst, nan)};
  }
  const op_desc in = copy_op(req.type, whole, {0, *off}, n, h.streamed, req.count); // -> dst
  dependency last;
  if (upload) {
    store_upload(req.out, *off, req.data.data() + h.streamed * elem, n * elem);
    last = {dst, enqueue(dst, in)};
  } else { // source -> store, then store -> destination once the source wrote it
    const op_desc out = copy_op(req.type, {0, *off}, {req.a, no_offset}, n, h.streamed, req.count);
    const dependency written{src.lane, enqueue(src.lane, out, {src.writer})};
    last = {dst, enqueue(dst, in, {written})};
  }
  free_later(*off, n * elem);
  h.streamed += n;
  return last;
}

// A piece for a user's thread: true once answered or placed, false while it waits for room.
bool planner::try_piece(held_request& h) {
  if (h.answered)
    return true;
  auto it = tensors_.find(h.operand);
  std::string why;
  if (it != tensors_.end() && !it->second.failure.empty())
    why = it->second.failure;
  else if (it == tensors_.end() || it->second.lane == cpu_lane || !it->second.placed)
    why = "read: operand #" + std::to_string(h.operand) + " is not a device tensor";
  else if (!lanes_[it->second.lane].failed.empty())
    why = lanes_[it->second.lane].failed;
  else if (h.first > it->second.bytes || h.count > it->second.bytes - h.first)
    why = "read: bytes [" + std::to_string(h.first) + ", +" + std::to_string(h.count)
          + ") lie outside operand #" + std::to_string(h.operand);
  if (!why.empty()) {
    out_.answer(h.wait, wait_answer::fail(errc::device_failed, std::move(why)));
    return true;
  }
  const auto& rec = it->second;
  const uint64_t bytes = h.count;
  auto off = store_.allocate(bytes);
  if (!off) {
    if (may_wait_for_space(bytes))
      return false;
    out_.answer(h.wait, wait_answer::fail(errc::device_failed,
                                          store_full(bytes, "to_vector of #"
                                                              + std::to_string(h.operand))));
    return true;
  }
  const op_desc op =
    copy_op(dtype::uint8, {0, *off}, {h.operand, no_offset}, h.count, h.first, rec.bytes);
  const dependency written{rec.lane, enqueue(rec.lane, op, {rec.writer})};
  pieces_.push_back({h.wait, h.operand, written, *off, bytes});
  return true;
}

// -- releases and the store -----------------------------------------------------------------------

// The user let go of operand id: its store range is freed once nothing reads it, its device
// memory once its lane's runner has run everything before.
void planner::drop(operand_id id) {
  auto it = tensors_.find(id);
  if (it == tensors_.end())
    return;
  const tensor_rec rec = std::move(it->second);
  tensors_.erase(it);
  if (!rec.placed)
    return; // never given memory
  if (rec.lane == cpu_lane)
    return free_later(rec.offset, rec.bytes);
  if (rec.export_slot != no_offset) // once its readers (issued before this release) ran
    free_later(rec.export_slot, sizeof(export_slot));
  auto& ln = lanes_[rec.lane];
  if (!ln.failed.empty())
    return; // its runner is gone or runs nothing more
  entry e;
  e.release = true;
  e.released = id;
  for (const auto& r : rec.readers) // direct transfers that read it where it lies
    if (r.lane != rec.lane && r.index > 0)
      e.deps.push_back(r);
  ln.queue.push_back(std::move(e));
  ++ln.entries;
}

// Acknowledgements still to come will free store ranges, `bytes` can fit, and the held head's
// deadline has not passed: waiting may help.
bool planner::may_wait_for_space(uint64_t bytes) const {
  return !frees_.empty() && bytes <= store_.capacity() && !store_wait_over_;
}

// No store range for `bytes` now: the operator waits when that may help; otherwise its result is
// tainted with why.
placement planner::no_space(operand_id out, uint64_t bytes, const std::string& what) {
  if (may_wait_for_space(bytes))
    return {true, {}};
  taint(out, store_full(bytes, what));
  return {};
}

std::string planner::store_full(uint64_t bytes, const std::string& what) const {
  std::string why = "store full: " + what + " needs " + std::to_string(bytes) + " bytes; "
                    + std::to_string(store_.live_bytes()) + " of "
                    + std::to_string(store_.capacity())
                    + " bytes are held (graph_option::store_bytes)";
  if (!store_.refusal().empty())
    why += "; " + store_.refusal();
  if (store_wait_over_)
    why += "; no acknowledgement freed enough within " + duration_string(wait_timeout_);
  return why;
}

// Frees a store range once every operator issued so far has run.
void planner::free_later(uint64_t offset, uint64_t bytes) {
  frees_.push_back({offset, bytes, issued_now()});
}

} // namespace ag
