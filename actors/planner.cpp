#include "actors/planner.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

#include <unistd.h>

#include "actors/flow_control.hpp"
#include "graph/deadline.hpp"
#include "graph/export_slot.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/timeline.hpp"
#include "ipc/trace.hpp"
#include "ipc/wire.hpp"

namespace ag {

planner::planner(planner_setup setup, planner_outbox& out)
  : out_(out),
    store_base_(setup.store_base),
    store_owner_(setup.store ? std::move(setup.store)
                             : std::make_shared<store_allocator>(setup.store_size,
                                                                 std::move(setup.reserve_store))),
    store_(*store_owner_),
    wait_timeout_(setup.wait_timeout),
    max_queued_bytes_(setup.max_queued_bytes),
    max_broadcast_bytes_(setup.max_broadcast_bytes),
    board_(setup.board),
    runners_see_board_(setup.runners_see_board),
    progress_timeout_(setup.progress_timeout),
    flow_(std::move(setup.flow)),
    trace_(std::move(setup.trace)),
    timeline_(std::move(setup.timeline)),
    peers_(std::move(setup.peers)),
    one_shot_bytes_(setup.one_shot_bytes),
    max_restarts_(setup.max_restarts) {
  for (const auto& d : setup.devices) {
    plan_lane l;
    l.dev = d;
    l.remote = setup.process && !d.is_cpu();
    lanes_.push_back(std::move(l));
  }
  // The trace's first record: what every later record's lanes and offsets refer to.
  if (trace_)
    trace_->write(trace::begin_rec{wire::version, setup.process, setup.devices, setup.store_size});
}

// -- from the user's threads ----------------------------------------------------------------------

// An operator from a user's thread, in arrival order: behind the held ones, if any. A transfer
// too large to stage whole goes through the store in pieces, from the head of the held queue.
void planner::submit(op_request& req) {
  const bool was_empty = held_.empty();
  if (!was_empty || piecewise(req)) {
    hold(std::move(req));
    if (was_empty)
      drain_held(true);
  } else if (!try_submit(req)) {
    hold(std::move(req));
    start_store_wait();
  }
  schedule_flush();
}

void planner::release(operand_id id) {
  if (!held_.empty() && held_refs_.count(id) > 0) { // a held operator names it
    held_request h;
    h.what = held_request::kind::release;
    h.operand = id;
    held_.push_back(std::move(h));
  } else {
    drop(id);
  }
  schedule_flush();
}

// A wait sends the open step now (planner_steps.cpp): what it waits for may be in it.
void planner::fetch(uint64_t wait, operand_id id) {
  break_step();
  await_operand({wait, id, false});
}

void planner::share(uint64_t wait, operand_id id) {
  break_step();
  await_operand({wait, id, true});
}

// A piece of a device tensor for a user's thread (to_vector of a tensor too large for the
// store): answered with a staging range once the piece is copied there.
void planner::fetch_piece(uint64_t wait, operand_id id, uint64_t first, uint64_t count) {
  break_step();
  if (stopping_)
    return out_.answer(wait, wait_answer::destroyed("to_vector"));
  held_request h;
  h.what = held_request::kind::piece;
  h.operand = id;
  h.first = first;
  h.count = count;
  h.wait = wait;
  expire_later(wait);
  const bool was_empty = held_.empty();
  held_.push_back(std::move(h));
  if (was_empty)
    drain_held(true);
}

void planner::unstage(uint64_t offset, uint64_t bytes) {
  auto it = staged_.find(offset);
  if (it == staged_.end() || it->second != bytes)
    return; // not a range this planner handed out
  staged_.erase(it);
  store_.deallocate(offset, bytes);
  collect();
}

void planner::sync(uint64_t wait) {
  break_step();
  if (stopping_) {
    out_.answer(wait, wait_answer::destroyed("sync"));
  } else if (!held_.empty()) {
    hold_wait(held_request::kind::sync, wait, 0);
    expire_later(wait);
  } else {
    syncs_.push_back({wait, entries_now()});
    collect();
    if (!syncs_.empty() && syncs_.back().wait == wait)
      expire_later(wait);
  }
}

void planner::wait_ready(uint64_t wait) {
  if (stopping_)
    out_.answer(wait, wait_answer::destroyed("start-up"));
  else if (!startup_failure_.empty())
    out_.answer(wait, wait_answer::fail(errc::device_failed, startup_failure_));
  else if (all_ready())
    out_.answer(wait, wait_answer::ok());
  else
    ready_waits_.push_back(wait);
}

// -- from the runners -----------------------------------------------------------------------------

// Records an acknowledgement as it arrived, in its wire encoding (docs/TRACE.md).
template <class Msg>
void planner::record_ack(uint32_t lane, wire::msg_type type, Msg msg) {
  if (trace_)
    trace_->write(trace::ack_rec{lane, type, wire::encode(msg)});
}

bool planner::ready(uint32_t l) {
  if (l >= lanes_.size())
    return false;
  record_ack(l, wire::msg_type::ready, wire::ready_msg{l, lanes_[l].dev, 0});
  auto& ln = lanes_[l];
  if (ln.down || !ln.failed.empty()) // a dead child's, still on its way
    return false;
  ln.ready = true;
  progressed(l);
  if (ln.restarting) { // a child started in place of a dead one: what waited for it goes now
    ln.restarting = false;
    ln.received_base = runners_see_board_ ? 0 : window_.seq(); // the ring's counts are whole
    ln.broadcasts_received = std::max(ln.broadcasts_received, ln.received_base);
    dispatch();
  }
  if (!all_ready() || !startup_failure_.empty())
    return false;
  for (uint64_t w : ready_waits_)
    out_.answer(w, wait_answer::ok());
  ready_waits_.clear();
  return true;
}

void planner::done(uint32_t l, uint64_t ops_done, uint64_t device_live, uint64_t entries) {
  if (l >= lanes_.size())
    return;
  record_ack(l, wire::msg_type::done, wire::done_msg{l, ops_done, device_live, entries});
  auto& ln = lanes_[l];
  ln.done = ops_done;
  ln.device_live_bytes = device_live;
  if (!ln.in_flight.empty()) {
    ln.entries_done = ln.in_flight.front();
    ln.in_flight.pop_front();
  }
  progressed(l);
  retire(l);
  settle_awaits();
  dispatch();
  collect();
}

void planner::failed(uint32_t l, uint64_t index, const std::string& what) {
  if (l >= lanes_.size()) // not one lane's (a malformed frame): every child is suspect
    return fail_remote(what);
  record_ack(l, wire::msg_type::failed, wire::failed_msg{l, index, what});
  const auto dev = lanes_[l].dev.str();
  fail_lane(l, what.find(dev) == std::string::npos ? dev + ": " + what : what);
}

void planner::received(uint32_t l, uint64_t count) {
  if (l >= lanes_.size())
    return;
  record_ack(l, wire::msg_type::received, wire::received_msg{l, count});
  if (lanes_[l].restarting)
    return; // counted from when its child joined: not before it is ready
  // A restarted child counts from when it joined, and may have counted some broadcasts that went
  // out before its Ready reached the planner twice (they are in received_base too): never more
  // than were sent.
  if (const uint64_t base = lanes_[l].received_base; base > 0)
    count = std::min(base + count, window_.seq());
  if (count > lanes_[l].broadcasts_received) {
    lanes_[l].broadcasts_received = count;
    progressed(l);
    check_queued();
  }
}

void planner::lane_down(uint32_t l, const std::string& why) {
  if (l >= lanes_.size() || lanes_[l].down)
    return;
  lanes_[l].down = true;
  if (board_)
    board_->forget_seats(l); // what its child held to spin (ipc/spin_census.hpp)
  collect(); // what its child could still write is free now
  if (!stopping_) {
    fail_lane(l, why);
    maybe_restart(l);
  }
}

void planner::fail_remote(const std::string& why) {
  for (uint32_t l = 0; l < lanes_.size(); ++l)
    if (lanes_[l].remote)
      fail_lane(l, why);
}

// -- from the driver's timers ---------------------------------------------------------------------

void planner::flush() {
  flush_scheduled_ = false;
  dispatch();
  collect(); // releases of cpu tensors free their ranges once nothing reads them
}

void planner::start_deadline(std::chrono::milliseconds start_timeout) {
  std::string missing;
  for (const auto& l : lanes_)
    if (!l.ready)
      missing += (missing.empty() ? "" : ", ") + l.dev.str();
  if (!missing.empty())
    fail_startup("start-up: no devicesReady from " + missing + " within "
                 + duration_string(start_timeout));
}

// -- shutdown -------------------------------------------------------------------------------------

void planner::stop() {
  stopping_ = true;
  mark_exports_gone(std::nullopt); // a read still waiting for an export stops waiting
  if (board_) { // a user's thread waiting on the board asks, and hears the runtime is gone
    board_->fault();
    board_->stop(); // and a runner's await ends
  }
  record_live();
  answer_all_waits();
}

// The operands the user still holds, for the trace's last word on them.
void planner::record_live() {
  if (!trace_)
    return;
  trace::live_rec live;
  for (const auto& [id, rec] : tensors_)
    if (rec.placed && rec.failure.empty())
      live.operands.push_back({id, rec.lane, rec.offset, rec.bytes});
  std::sort(live.operands.begin(), live.operands.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  trace_->write(live);
}

// -- what it holds --------------------------------------------------------------------------------

plan_stats planner::stats() const {
  plan_stats s;
  s.store_live = store_.live_bytes();
  for (const auto& l : lanes_)
    s.device_live += l.device_live_bytes;
  s.batches = batches_;
  s.operators = operators_;
  s.restarts = restarts_;
  return s;
}

const tensor_rec* planner::tensor(operand_id id) const {
  auto it = tensors_.find(id);
  return it == tensors_.end() ? nullptr : &it->second;
}

// -- queues and credits ---------------------------------------------------------------------------

void planner::schedule_flush() {
  if (!flush_scheduled_) {
    flush_scheduled_ = true;
    out_.flush_soon();
  }
}

// Appends an operator to a lane's queue; returns its index there. deps: the writers of its
// inputs; only those on other lanes are kept (and only transfers have any), but for a node lane's
// read of the store.
uint64_t planner::enqueue(uint32_t l, const op_desc& op, std::initializer_list<dependency> deps) {
  auto& ln = lanes_[l];
  entry e;
  e.op = op;
  // A lane on a node reads the store through the controller's copy of it, which holds what the
  // lane itself wrote there only once that was acknowledged (Data-out comes before Done): such a
  // read waits for its own lane's writer too.
  const bool store_read_on_node = !ln.dev.local() && (op.a.on_host() || op.b.on_host() || op.c.on_host());
  for (const auto& d : deps) {
    if ((d.lane == l && !store_read_on_node) || d.index == 0)
      continue;
    if (d.sent || !board_orders(d.lane, l)) {
      e.deps.push_back(d);
      continue;
    }
    auto same = std::find_if(e.awaited.begin(), e.awaited.end(),
                             [&](const dependency& a) { return a.lane == d.lane; });
    if (same == e.awaited.end())
      e.awaited.push_back(d);
    else
      same->index = std::max(same->index, d.index);
  }
  // On the board the runner itself waits for the other lane's operator: the entry goes out with
  // the await before it as soon as that operator is sent, not once it is acknowledged.
  for (const auto& d : e.awaited) {
    entry w;
    w.op = make_op(op_kind::await, {}, {}, {}, 0, d.index, d.lane, 0);
    w.deps.push_back({d.lane, d.index, true});
    ln.queue.push_back(std::move(w));
    ++ln.entries;
    ++ln.issued;
  }
  ln.queue.push_back(std::move(e));
  ++ln.entries;
  return ++ln.issued;
}

// True when lane `to`'s runner can wait for lane `from`'s operators on the completion board: both
// run on this machine and publish there (not the sockets, not a node).
bool planner::board_orders(uint32_t from, uint32_t to) const {
  return board_ != nullptr && runners_see_board_ && from != to && lanes_[from].dev.local()
         && lanes_[to].dev.local();
}

// Forgets the sent entries no failure can taint any more: those from the front of each lane's
// unsettled list up to its first await whose lane has neither acknowledged nor failed.
void planner::settle_awaits() {
  for (auto& ln : lanes_) {
    while (!ln.unsettled.empty()) {
      const auto& e = ln.unsettled.front();
      if (!e.release && e.op.kind == op_kind::await) {
        const auto& awaited = lanes_[e.op.k];
        if (awaited.done < e.op.m && awaited.failed.empty())
          break;
      }
      ln.unsettled.pop_front();
    }
  }
}

// Gives the user's credit for req back once `retire` has run (index 0: now).
void planner::settle(const op_request& req, std::optional<uint32_t> l, dependency retire) {
  if (!flow_)
    return;
  flow_->release_bytes(req.data.size());
  if (retire.index == 0 || !l) // a device the runtime does not have was charged to the cpu
    flow_->release(l.value_or(cpu_lane), 1);
  else
    lanes_[retire.lane].credits.push_back({retire.index, *l});
}

// Gives back the credits of the operators lane l has run (all of them once it failed).
void planner::retire(uint32_t l) {
  auto& ln = lanes_[l];
  if (!flow_) {
    ln.credits.clear();
    return;
  }
  // Given back in runs of one charged lane (nearly always the lane itself): no allocation and
  // one wake-up per run on an acknowledgement.
  const bool all = !ln.failed.empty();
  while (!ln.credits.empty() && (all || ln.credits.front().index <= ln.done)) {
    const uint32_t charged = ln.credits.front().charged;
    uint64_t n = 0;
    while (!ln.credits.empty() && ln.credits.front().charged == charged
           && (all || ln.credits.front().index <= ln.done)) {
      ++n;
      ln.credits.pop_front();
    }
    flow_->release(charged, n);
  }
}

// Sends every lane what it can run now: a prefix of its queue whose dependencies are met. A
// broadcast larger than max_broadcast_bytes is cut into several, in order. A lane whose reads wait
// only for exports sent in this pass to a lane after it gets its batch in one more broadcast.
void planner::dispatch() {
  check_open_step();
  timeline::scoped_span span{timeline_.get(), ::getpid(), 0, "dispatch", "executor"};
  const uint64_t batches_before = batches_, operators_before = operators_;
  for (bool again = true; again;) {
    bool cut = false;
    const uint64_t batches_then = batches_;
    wire::execute_msg broadcast;
    std::size_t budget = max_broadcast_bytes_ == 0 ? SIZE_MAX
                                                   : max_broadcast_bytes_ - wire::max_length_bytes;
    for (uint32_t l = 0; l < lanes_.size(); ++l)
      cut = dispatch_lane(l, broadcast, budget) || cut;
    // One broadcast serves every child (each runs the batch of its own lane).
    if (!broadcast.batches.empty())
      sent_broadcast(std::move(broadcast));
    again = cut || (batches_ != batches_then && sendable());
  }
  if (batches_ == batches_before)
    return span.drop(); // nothing was sent: no span
  span.add("batches", batches_ - batches_before);
  span.add("operators", operators_ - operators_before);
}

// True when a lane's next entry could be sent now.
bool planner::sendable() const {
  for (const auto& ln : lanes_) {
    if (ln.queue.empty() || !ln.takes_batches())
      continue;
    if (ready(ln.queue.front()) && step_room(ln).first > 0)
      return true;
  }
  return false;
}

// True when entry e can be sent: what it depends on is met, and an await is at most await_window
// operators ahead of what the lane it awaits has acknowledged. So a lane that stops (stopped,
// hung, killed) holds back at most that much sent work on the others: on its failure the rest,
// still queued, becomes NaN stand-ins at once, where sent work would be run through, await by
// await (60 000 queued all_reduces took over 10 s to settle on a loaded machine).
bool planner::ready(const entry& e) const {
  if (!std::all_of(e.deps.begin(), e.deps.end(), [&](const auto& d) { return satisfied(d); }))
    return false;
  if (e.release || e.op.kind != op_kind::await)
    return true;
  const auto& awaited = lanes_[e.op.k];
  return awaited.done + await_window >= e.op.m || !awaited.failed.empty();
}

// The batch of lane l: run now (a lane of this process) or added to the broadcast (remote), as
// much of it as `budget` bytes of the broadcast still hold. True when the budget cut it short.
bool planner::dispatch_lane(uint32_t l, wire::execute_msg& broadcast, std::size_t& budget) {
  auto& ln = lanes_[l];
  if (ln.queue.empty() || !ln.takes_batches())
    return false;
  constexpr std::size_t batch_bytes =
    sizeof(batch::lane) + sizeof(batch::ops_before) + sizeof(batch::step) + 2 * wire::max_length_bytes;
  if (ln.remote && budget < batch_bytes + wire::op_desc_bytes && !broadcast.batches.empty())
    return true;
  std::size_t room = ln.remote && budget > batch_bytes ? budget - batch_bytes : 0;
  auto [step_left, step] = step_room(ln); // steps: up to the end of the first marked one
  batch b;
  b.lane = l;
  b.ops_before = ln.sent;
  b.step = step;
  // A step's batch is taken whole: room for it at once (not for a queue of 100 000 collectives).
  if (step != 0)
    b.ops.reserve(static_cast<std::size_t>(std::min<uint64_t>(ln.queue.size(), step_left)));
  bool cut = false;
  bool at_mark = false;
  while (!ln.queue.empty()) {
    auto& e = ln.queue.front();
    if (!ready(e))
      break;
    if (step_left == 0) { // the rest is another step's (or waits for its mark)
      at_mark = true;
      break;
    }
    --step_left;
    if (ln.remote) {
      const std::size_t bytes = e.release ? wire::no_hold_bytes : wire::op_desc_bytes;
      const bool first = b.ops.empty() && b.no_hold.empty() && broadcast.batches.empty();
      if (bytes > room && !first) {
        cut = true;
        break;
      }
      room -= std::min(bytes, room);
    }
    if (e.release)
      b.no_hold.push_back(e.released);
    else
      b.ops.push_back(e.op);
    if (!ln.unsettled.empty() || (!e.release && e.op.kind == op_kind::await))
      ln.unsettled.push_back(std::move(e));
    ln.queue.pop_front();
  }
  const uint64_t sent = ln.entries - ln.queue.size();
  while (!ln.step_ends.empty() && ln.step_ends.front().first <= sent)
    ln.step_ends.pop_front();
  if (at_mark && step_room(ln).first > 0) // the next step goes in a batch of its own
    cut = true;
  if (b.ops.empty() && b.no_hold.empty())
    return cut;
  ln.sent += b.ops.size();
  ln.entries_sent += b.ops.size() + b.no_hold.size();
  ln.in_flight.push_back(ln.entries_sent);
  ++batches_;
  operators_ += b.ops.size();
  if (ln.remote) {
    budget -= std::min(budget, wire::encoded_size(b));
    broadcast.batches.push_back(std::move(b));
  } else {
    if (trace_)
      trace_->write(trace::local_rec{b});
    out_.run(l, std::move(b));
  }
  return cut;
}

bool planner::releases_alone() const {
  bool any = false;
  for (const auto& ln : lanes_) {
    if (!ln.takes_batches())
      continue;
    for (const auto& e : ln.queue) {
      if (!e.release)
        return false;
      any = true;
    }
  }
  return any && held_.empty();
}

// -- lanes ----------------------------------------------------------------------------------------

std::optional<uint32_t> planner::lane_of(const device& d) const {
  for (uint32_t i = 0; i < lanes_.size(); ++i)
    if (lanes_[i].dev == d)
      return i;
  return std::nullopt;
}

std::string planner::op_name(const op_request& req) const {
  return to_string(req.kind) + " -> #" + std::to_string(req.out) + " on " + req.where.str();
}

// A failed lane runs nothing more: nothing waits for it.
bool planner::satisfied(const dependency& d) const {
  const auto& ln = lanes_[d.lane];
  return (d.sent ? ln.sent : ln.done) >= d.index || !ln.failed.empty();
}

// A failed lane runs nothing more; a child process, though, may still be running what it was
// sent until it is down (reaped): only then is a store range it could write free again.
bool planner::all_done(const std::vector<uint64_t>& issued) const {
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const auto& l = lanes_[i];
    const bool quiet = !l.failed.empty() && (!l.remote || l.down);
    if (l.done < issued[i] && !quiet)
      return false;
  }
  return true;
}

bool planner::all_entries_done(const std::vector<uint64_t>& entries) const {
  for (std::size_t i = 0; i < lanes_.size(); ++i)
    if (lanes_[i].entries_done < entries[i] && lanes_[i].failed.empty())
      return false;
  return true;
}

std::vector<uint64_t> planner::entries_now() const {
  std::vector<uint64_t> v(lanes_.size());
  for (std::size_t i = 0; i < lanes_.size(); ++i)
    v[i] = lanes_[i].entries;
  return v;
}

std::vector<uint64_t> planner::issued_now() const {
  std::vector<uint64_t> v(lanes_.size());
  for (std::size_t i = 0; i < lanes_.size(); ++i)
    v[i] = lanes_[i].issued;
  return v;
}

bool planner::all_ready() const {
  return std::all_of(lanes_.begin(), lanes_.end(), [](const auto& l) { return l.ready; });
}

} // namespace ag
