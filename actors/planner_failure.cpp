// The planner's failures: an operator that cannot run taints its result; a lane that fails taints
// what it holds and what other lanes wait to receive from it, and nothing else; start-up fails
// when a lane does not come up. Every failure is reported once, by the next sync.
#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "actors/planner.hpp"
#include "graph/export_slot.hpp"
#include "graph/op_table.hpp"
#include "ipc/completion_board.hpp"

namespace ag {

namespace {

// An operator that writes its result and nothing else, from what it reads: once what it reads is
// lost, a NaN fill of that result stands in for it (an await, an export, a peer's forgetting and
// the direct transfers do more than that, or are another lane's business).
bool writes_only_its_result(op_kind k) {
  if (k == op_kind::copy)
    return true;
  switch (info(k).family) {
    case op_family::transfer:
    case op_family::control: return false;
    default: return true;
  }
}

// Entry e becomes a NaN fill of what it writes: it reads nothing and so waits for nothing (the
// awaits queued before it are emptied too, planner::empty_awaits_of_stand_ins). The fill covers
// exactly the operator's result (count elements of its dtype; one for a sum), the whole store range
// of a piece copied out to the store, the same piece of a device operand for a piece copied in.
void make_stand_in(entry& e) {
  auto& op = e.op;
  const bool piece = (op.kind == op_kind::copy || op.kind == op_kind::fill) && op.n != 0;
  if (op.kind == op_kind::sum)
    op.count = 1;
  if (!piece || op.out.on_host())
    op.m = op.n = 0; // m and n say which piece only for pieces; for the rest they are shapes
  op.k = 0;
  op.kind = op_kind::fill;
  op.scalar = std::numeric_limits<double>::quiet_NaN(); // 0 in an integer dtype
  op.a = {};
  op.b = {};
  op.c = {};
  op.layout = {};
  e.deps.clear();
  e.awaited.clear();
  e.sources.clear();
  e.source_lanes.clear();
  e.stand_in = true;
}

} // namespace

// A failure the next sync() reports (once).
void planner::record(const std::string& what) {
  if (board_) // what a user's thread waits for on the board is the planner's to answer now
    board_->fault();
  if (unreported_.empty())
    unreported_ = what;
  else
    ++unreported_more_;
}

wait_answer planner::take_unreported() {
  std::string what = std::move(unreported_);
  if (unreported_more_ > 0)
    what += " (and " + std::to_string(unreported_more_) + " more failures)";
  unreported_.clear();
  unreported_more_ = 0;
  return wait_answer::fail(errc::device_failed, std::move(what));
}

// The result of an operator that will not run: readers get `why`.
void planner::taint(operand_id out, std::string why) {
  auto& rec = tensors_[out];
  rec.placed = false;
  rec.failure = std::move(why);
  record(rec.failure);
}

// Why the operator cannot run, or empty: an unknown or tainted input, a failed lane.
std::string planner::blocker(const op_request& req, std::optional<uint32_t> l) const {
  if (!l)
    return op_name(req) + ": " + req.where.str() + " is not a device of this runtime";
  if (!lanes_[*l].failed.empty())
    return op_name(req) + ": " + lanes_[*l].failed;
  for (operand_id in : {req.a, req.b, req.c}) {
    if (in == 0)
      continue;
    auto it = tensors_.find(in);
    if (it == tensors_.end())
      return op_name(req) + ": operand #" + std::to_string(in) + " does not exist";
    if (!it->second.failure.empty())
      return op_name(req) + ": input #" + std::to_string(in) + " failed: " + it->second.failure;
    if (!lanes_[it->second.lane].failed.empty())
      return op_name(req) + ": input #" + std::to_string(in) + " is on "
             + lanes_[it->second.lane].failed;
  }
  return {};
}

// Lane l runs nothing more. What it holds, and what other lanes were waiting to receive from it,
// is tainted with `why`; operators on other lanes that waited for it still run, on a stand-in
// (a NaN fill of the operand), so that every lane's operand map and counts stay whole.
void planner::fail_lane(uint32_t l, const std::string& why) {
  auto& ln = lanes_[l];
  if (!ln.failed.empty())
    return;
  ln.failed = why;
  record(why);
  ln.queue.clear();
  ln.unsettled.clear();
  // A runner of another lane waiting for this one on the board stops waiting (this lane's runner
  // may be gone without a mark of its own).
  if (board_ && ln.dev.local())
    board_->failed(l, 0);
  if (ln.remote && !ln.down) // a child runs nothing more for a failed lane: it goes
    out_.kill(l);
  mark_exports_gone(l);
  for (auto& [id, rec] : tensors_) {
    const bool lost = rec.lane == l || (rec.writer.lane == l && rec.writer.index > ln.done);
    if (lost && rec.failure.empty())
      rec.failure = why;
  }
  // What other children were reading of its memory when it went may be lost too; and they close
  // their mappings of it.
  for (const auto& r : direct_reads_)
    if (r.from == l && lanes_[r.reader.lane].done < r.reader.index)
      if (auto it = tensors_.find(r.out); it != tensors_.end() && it->second.failure.empty())
        it->second.failure = why;
  direct_reads_.erase(std::remove_if(direct_reads_.begin(), direct_reads_.end(),
                                     [l](const direct_read& r) { return r.from == l; }),
                      direct_reads_.end());
  if (ln.remote)
    for (uint32_t q = 0; q < lanes_.size(); ++q)
      if (q != l && lanes_[q].remote && lanes_[q].failed.empty() && peer(q, l))
        enqueue(q, make_op(op_kind::peer_forget, {}, {}, {}, 0, 0, l, 0));
  stand_in_for(l, why);
  settle_awaits(); // what waited for l no longer does
  if (!ln.ready && !ln.restarting) // a restarted child not ready yet is no start-up's
    fail_startup("runner of " + ln.dev.str() + " stopped before it was ready: " + why);
  retire(l);
  dispatch();
  check_queued(); // a failed lane no longer holds the others back
  collect();
}

// The exports of lane l (of every lane: none) that reads were sent for but that it has not written
// yet never will be: those readers, which may already be waiting, read their exporter as gone
// (NaN, and the planner taints what they write), and the watchdog's watch of them starts again
// now. A slot a sent read names stays allocated until that read has run.
void planner::mark_exports_gone(std::optional<uint32_t> l) {
  for (const auto& r : direct_reads_) {
    if ((l && r.from != *l) || r.slot == operand_ref::no_offset
        || lanes_[r.reader.lane].done >= r.reader.index || !lanes_[r.reader.lane].failed.empty())
      continue; // no read waits on it (one of a failed lane may be reused by now)
    if (store_base_ != nullptr)
      export_slots::mark_gone(store_base_ + r.slot);
    progressed(r.reader.lane);
  }
}

// The operators of other lanes that wait for what failed lane l has not run, or that would read
// its memory directly, become NaN fills of their result, tainted with why.
void planner::stand_in_for(uint32_t l, const std::string& why) {
  const uint64_t done = lanes_[l].done;
  std::unordered_map<uint64_t, std::string> staged; // staging ranges a stand-in writes
  auto after_unrun = [&](const std::vector<dependency>& deps) {
    return std::any_of(deps.begin(), deps.end(),
                       [&](const dependency& d) { return d.lane == l && d.index > done; });
  };
  // Sent entries that come after an operator of l it never ran already read what l did not write:
  // what they write is tainted.
  for (auto& other : lanes_)
    for (auto& e : other.unsettled) {
      if (e.release || !after_unrun(e.awaited))
        continue;
      if (e.op.out.id != 0) {
        if (auto it = tensors_.find(e.op.out.id); it != tensors_.end() && it->second.failure.empty())
          it->second.failure = why;
      } else if (e.op.out.on_host()) {
        staged.emplace(e.op.out.offset, why);
      }
    }
  for (auto& other : lanes_) {
    for (auto& e : other.queue) {
      if (!e.release && e.op.kind == op_kind::await)
        continue; // sent as it is: its runner finds l failed on the board and goes on
      bool waits = after_unrun(e.awaited);
      for (const auto& d : e.deps)
        waits = waits || (d.lane == l && d.index > done);
      // A direct transfer reads the failed lane's memory, which went with its runner.
      for (uint32_t s : e.source_lanes)
        waits = waits || s == l;
      if (!waits)
        continue;
      make_stand_in(e);
      if (auto it = tensors_.find(e.op.out.id); it != tensors_.end() && e.op.out.id != 0)
        if (it->second.failure.empty())
          it->second.failure = why;
      if (e.op.out.id == 0 && e.op.out.on_host()) // a staging range: its readers are tainted
        staged.emplace(e.op.out.offset, why);
    }
  }
  taint_readers(std::move(staged));
}

// Operators still queued that read a tainted operand (a stand-in's NaNs, or what was computed
// from them) taint their result in turn, across lanes, until nothing changes: no tensor computed
// from a failed lane's work reads as healthy. A staging range (operand 0) written from a tainted
// operand, or by a stand-in (`staged`), carries the taint to the copy that reads it.
// A worklist over the queued readers of each operand and range: every entry is looked at a bounded
// number of times however long the chains across lanes are (a pass per link was quadratic).
void planner::taint_readers(std::unordered_map<uint64_t, std::string> staged) {
  // staged: staging offset -> why it is tainted
  // Operands the user let go of before their writer ran (planner::drop forgot them at once): the
  // taint passes through them all the same, to what was computed from them.
  std::unordered_map<operand_id, std::string> dropped;
  auto failure_of = [&](const operand_ref& r) -> const std::string* {
    if (r.id == 0) {
      auto it = staged.find(r.offset);
      return it == staged.end() ? nullptr : &it->second;
    }
    if (auto it = tensors_.find(r.id); it != tensors_.end())
      return it->second.failure.empty() ? nullptr : &it->second.failure;
    auto it = dropped.find(r.id);
    return it == dropped.end() ? nullptr : &it->second;
  };
  auto why_of = [&](const entry& e) -> const std::string* {
    if (e.release)
      return nullptr;
    const std::string* why = failure_of(e.op.a);
    if (!why)
      why = failure_of(e.op.b);
    if (!why)
      why = failure_of(e.op.c);
    for (std::size_t i = 0; !why && i < e.sources.size(); ++i)
      why = failure_of(operand_ref{e.sources[i], operand_ref::no_offset});
    return why;
  };
  // Who reads what: operands by id, staging ranges by offset.
  std::unordered_map<operand_id, std::vector<entry*>> by_operand;
  std::unordered_map<uint64_t, std::vector<entry*>> by_range;
  auto index = [&](const operand_ref& r, entry* e) {
    if (r.id != 0)
      by_operand[r.id].push_back(e);
    else if (r.offset != operand_ref::no_offset)
      by_range[r.offset].push_back(e);
  };
  std::vector<entry*> work;
  // Not sent yet, so what it does can still change: its lane.
  std::unordered_map<const entry*, uint32_t> queued;
  // Queued entries, and sent ones that may still run after a failure they were waiting for.
  for (uint32_t l = 0; l < lanes_.size(); ++l)
    for (auto* entries : {&lanes_[l].unsettled, &lanes_[l].queue})
      for (auto& e : *entries) {
        if (e.release)
          continue;
        index(e.op.a, &e);
        index(e.op.b, &e);
        index(e.op.c, &e);
        for (operand_id id : e.sources)
          by_operand[id].push_back(&e);
        work.push_back(&e);
        if (entries == &lanes_[l].queue)
          queued.emplace(&e, l);
      }
  std::unordered_set<entry*> tainted;
  while (!work.empty()) {
    entry* e = work.back();
    work.pop_back();
    if (tainted.count(e) != 0)
      continue;
    const std::string* why = why_of(*e);
    if (!why)
      continue;
    tainted.insert(e);
    const std::vector<entry*>* readers = nullptr;
    if (e->op.out.id == 0) {
      if (e->op.out.offset == operand_ref::no_offset
          || !staged.emplace(e->op.out.offset, *why).second)
        continue;
      if (auto it = by_range.find(e->op.out.offset); it != by_range.end())
        readers = &it->second;
    } else {
      const operand_id out = e->op.out.id;
      bool fresh = false; // tainted only now: its readers are looked at again
      if (auto it = tensors_.find(out); it != tensors_.end()) {
        fresh = it->second.failure.empty();
        if (fresh)
          it->second.failure = *why;
      } else {
        fresh = dropped.emplace(out, *why).second;
      }
      if (auto r = by_operand.find(out); fresh && r != by_operand.end())
        readers = &r->second;
    }
    if (readers)
      for (entry* r : *readers)
        if (tainted.count(r) == 0)
          work.push_back(r);
  }
  // What is still queued of that need not run as written: computed from lost values, it would
  // wait for each of its inputs' writers on their lanes, one hand-over after another (60 000
  // queued all_reduces settled their failure at the pace of the collectives themselves, 10 s and
  // more on a loaded machine). A NaN fill of its result waits for nothing.
  // A copy out to the store stays a copy where the runner does not write the store itself: a
  // CUDA lane runs no kernel on it, and a node's lane sends what it copies there back.
  for (entry* t : tainted) {
    auto q = queued.find(t);
    if (q == queued.end() || !writes_only_its_result(t->op.kind))
      continue;
    const auto& dev = lanes_[q->second].dev;
    if (!t->op.out.on_host() || (dev.type != device::kind::cuda && dev.local()))
      make_stand_in(*t);
  }
  empty_awaits_of_stand_ins();
}

// The awaits queued right before a stand-in were its own (planner::enqueue puts an entry's awaits
// just before it): they now wait for nothing. They keep their place, as every operator index of
// the lane is known to the others, and await operator 0 of their lane, which a runner finds
// reached without blocking.
void planner::empty_awaits_of_stand_ins() {
  for (auto& ln : lanes_) {
    auto run = ln.queue.begin(); // the first await of the run before `it`
    for (auto it = ln.queue.begin(); it != ln.queue.end(); ++it) {
      if (!it->release && it->op.kind == op_kind::await)
        continue;
      if (it->stand_in)
        for (; run != it; ++run) {
          run->op.m = 0;
          run->deps.clear();
        }
      run = std::next(it);
    }
  }
}

void planner::fail_startup(const std::string& why) {
  if (board_)
    board_->fault();
  if (startup_failure_.empty())
    startup_failure_ = why;
  for (uint64_t w : ready_waits_)
    out_.answer(w, wait_answer::fail(errc::device_failed, startup_failure_));
  ready_waits_.clear();
}

} // namespace ag
