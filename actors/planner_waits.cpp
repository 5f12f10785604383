// The planner's waits: requests held behind an operator that waits for store space, the reads and
// syncs waiting for acknowledgements, and each one's deadline.
#include <algorithm>

#include "actors/planner.hpp"
#include "graph/export_slot.hpp"
#include "ipc/completion_board.hpp"
#include "graph/deadline.hpp"

namespace ag {

namespace {

std::string wait_name(const pending_fetch& f) {
  return (f.shared ? "device_bytes of tensor #" : "to_vector of tensor #")
         + std::to_string(f.operand);
}

std::string wait_name(const held_request& h) {
  if (h.what == held_request::kind::sync)
    return "sync";
  return wait_name(pending_fetch{h.wait, h.operand, h.what == held_request::kind::share});
}

bool is_wait(const held_request& h) {
  return h.what != held_request::kind::submit && h.what != held_request::kind::release
         && h.what != held_request::kind::collective;
}


} // namespace

// -- held requests --------------------------------------------------------------------------------

void planner::hold(op_request&& req) {
  for (operand_id id : {req.out, req.a, req.b, req.c})
    if (id != 0)
      ++held_refs_[id];
  held_request h;
  h.what = held_request::kind::submit;
  h.req = std::move(req);
  held_.push_back(std::move(h));
}

void planner::unhold(const op_request& req) {
  for (operand_id id : {req.out, req.a, req.b, req.c})
    if (auto it = held_refs_.find(id); id != 0 && it != held_refs_.end() && --it->second == 0)
      held_refs_.erase(it);
}

// A sync or read that arrived behind held operators: answered once they are placed.
void planner::hold_wait(held_request::kind what, uint64_t wait, operand_id id) {
  held_request h;
  h.what = what;
  h.operand = id;
  h.wait = wait;
  held_.push_back(std::move(h));
}

// The held head waits for store space until wait_timeout; then it fails with "store full".
void planner::start_store_wait() {
  store_wait_over_ = false;
  store_wait_ = new_wait();
  expire_later(store_wait_);
}

// Places what was held, in order, until an operator still finds no store space. fresh: the head
// has not waited yet.
void planner::drain_held(bool fresh) {
  bool moved = fresh;
  while (!held_.empty()) {
    if (!drain_head(held_.front(), moved))
      return schedule_flush();
    held_.pop_front();
    moved = true;
  }
  store_wait_over_ = false;
  if (moved)
    schedule_flush();
}

// Places or answers the held head; false while it waits for store space (with a new deadline
// when it is a new head, or when it placed some of its pieces).
bool planner::drain_head(held_request& h, bool moved) {
  const uint64_t streamed = h.streamed;
  switch (h.what) {
    case held_request::kind::submit: {
      const bool piecewise_head = h.streamed > 0 || piecewise(h.req);
      if (!(piecewise_head ? stream_pieces(h) : try_submit(h.req))) {
        if (moved || h.streamed != streamed)
          start_store_wait();
        return false;
      }
      unhold(h.req);
      store_wait_over_ = false; // that deadline was this head's alone
      return true;
    }
    case held_request::kind::collective:
      if (!stream_collective(h)) {
        if (moved || h.streamed != streamed)
          start_store_wait();
        return false;
      }
      for (const auto& ids : {h.coll.parts, h.coll.outs})
        for (operand_id id : ids)
          if (auto it = held_refs_.find(id); it != held_refs_.end() && --it->second == 0)
            held_refs_.erase(it);
      store_wait_over_ = false;
      return true;
    case held_request::kind::piece:
      if (!try_piece(h)) {
        if (moved)
          start_store_wait();
        return false;
      }
      store_wait_over_ = false;
      return true;
    case held_request::kind::release: drop(h.operand); return true;
    case held_request::kind::sync:
      if (!h.answered)
        syncs_.push_back({h.wait, entries_now()});
      return true;
    case held_request::kind::fetch:
    case held_request::kind::share: {
      const pending_fetch f{h.wait, h.operand, h.what == held_request::kind::share};
      if (!h.answered && !answer(f))
        fetches_.push_back(f);
      return true;
    }
  }
  return true;
}

// -- answering ------------------------------------------------------------------------------------

// Answers the waits whose work is done, frees the store ranges nobody can read any more, and
// places the operators that waited for them.
void planner::collect() {
  bool freed = false;
  free_collected(freed);
  if (!held_.empty() && (freed || frees_.empty()))
    drain_held();
  for (auto it = fetches_.begin(); it != fetches_.end();) {
    if (answer(*it))
      it = fetches_.erase(it);
    else
      ++it;
  }
  collect_pieces();
  for (auto it = syncs_.begin(); it != syncs_.end();) {
    if (!all_entries_done(it->entries)) {
      ++it;
      continue;
    }
    out_.answer(it->wait, unreported_.empty() ? wait_answer::ok() : take_unreported());
    it = syncs_.erase(it);
  }
}

void planner::free_collected(bool& freed) {
  // Issued counts never decrease and a lane's being done depends on the lane alone: once the
  // oldest pending free must wait, every later one must too.
  while (!frees_.empty() && all_done(frees_.front().issued)) {
    store_.deallocate(frees_.front().offset, frees_.front().bytes);
    frees_.pop_front();
    freed = true;
  }
}

// Pieces copied to their staging range go to the user's thread, which gives the range back.
void planner::collect_pieces() {
  for (auto it = pieces_.begin(); it != pieces_.end();) {
    const auto& ln = lanes_[it->written.lane];
    const auto rec = tensors_.find(it->operand);
    // A tensor tainted after its piece was placed holds NaN stand-ins, or what was computed from
    // them: the read fails at once, as a read of a whole tensor does (answer_fetch).
    if (rec != tensors_.end() && !rec->second.failure.empty()) {
      out_.answer(it->wait, wait_answer::fail(errc::device_failed, rec->second.failure));
      free_later(it->offset, it->bytes);
    } else if (ln.done >= it->written.index) {
      staged_[it->offset] = it->bytes;
      out_.answer(it->wait, wait_answer::ok(it->offset));
    } else if (!ln.failed.empty()) {
      out_.answer(it->wait, wait_answer::fail(errc::device_failed, ln.failed));
      free_later(it->offset, it->bytes);
    } else {
      ++it;
      continue;
    }
    it = pieces_.erase(it);
  }
}

// Answers with the operand's store offset, or why it cannot be read; false while it is not
// written.
bool planner::answer_fetch(uint64_t wait, operand_id id) {
  auto it = tensors_.find(id);
  if (it == tensors_.end() || it->second.lane != cpu_lane) {
    out_.answer(wait, wait_answer::fail(errc::bad_request, "read: operand #" + std::to_string(id)
                                                             + " is not a cpu tensor"));
    return true;
  }
  const auto& rec = it->second;
  if (!rec.failure.empty()) {
    out_.answer(wait, wait_answer::fail(errc::device_failed, rec.failure));
    return true;
  }
  if (!satisfied(rec.writer))
    return false;
  out_.answer(wait, wait_answer::ok(rec.offset));
  return true;
}

void planner::await_operand(const pending_fetch& f) {
  if (stopping_) {
    out_.answer(f.wait, wait_answer::destroyed(wait_name(f)));
  } else if (!held_.empty()) {
    hold_wait(f.shared ? held_request::kind::share : held_request::kind::fetch, f.wait, f.operand);
    expire_later(f.wait);
  } else if (!answer(f)) {
    fetches_.push_back(f);
    expire_later(f.wait);
  }
}

// Exports the device operand (once) and answers with its export's offset once that is written; a
// lane in a child process cannot share its memory with the user's thread.
bool planner::answer_share(uint64_t wait, operand_id id) {
  const auto what = "device_bytes of tensor #" + std::to_string(id);
  auto it = tensors_.find(id);
  if (it != tensors_.end() && !it->second.failure.empty()) {
    out_.answer(wait, wait_answer::fail(errc::device_failed, it->second.failure));
    return true;
  }
  if (it == tensors_.end() || it->second.lane == cpu_lane) {
    out_.answer(wait, wait_answer::fail(errc::bad_request, what + ": not a device tensor"));
    return true;
  }
  auto& rec = it->second;
  const auto& lane = lanes_[rec.lane];
  if (lane.remote) {
    out_.answer(wait, wait_answer::fail(errc::bad_request,
                                        what + ": " + lane.dev.str()
                                          + " runs in a process of its own, whose memory this "
                                            "one cannot use (share it in thread mode, or read it)"));
    return true;
  }
  if (rec.export_slot == operand_ref::no_offset) {
    std::vector<uint64_t> none;
    if (!export_all({id}, 0, none)) {
      out_.answer(wait, wait_answer::fail(errc::device_failed,
                                          store_full(sizeof(export_slot), what)));
      return true;
    }
    schedule_flush();
  }
  if (!satisfied(rec.exported))
    return false;
  out_.answer(wait, wait_answer::ok(rec.export_slot));
  return true;
}

// Shutdown: every thread still waiting on this runtime gets an error rather than a hang.
void planner::answer_all_waits() {
  for (auto& h : held_)
    if (is_wait(h) && !h.answered)
      out_.answer(h.wait, wait_answer::destroyed(wait_name(h)));
  held_.clear();
  held_refs_.clear();
  for (auto& f : fetches_)
    out_.answer(f.wait, wait_answer::destroyed(wait_name(f)));
  fetches_.clear();
  for (auto& p : pieces_)
    out_.answer(p.wait, wait_answer::destroyed("to_vector"));
  pieces_.clear();
  for (auto& s : syncs_)
    out_.answer(s.wait, wait_answer::destroyed("sync"));
  syncs_.clear();
  for (uint64_t w : ready_waits_)
    out_.answer(w, wait_answer::destroyed("start-up"));
  ready_waits_.clear();
}

// -- deadlines ------------------------------------------------------------------------------------

void planner::expire_later(uint64_t wait) {
  if (!no_deadline(wait_timeout_))
    out_.expire_after(wait, wait_timeout_);
}

void planner::expire(uint64_t wait) {
  if (wait == store_wait_ && !held_.empty()) { // the held head stops waiting for space
    store_wait_over_ = true;
    drain_held();
    collect();
    return;
  }
  if (!expire_held(wait))
    expire_pending(wait);
}

// A wait held behind an operator that waits for store space.
bool planner::expire_held(uint64_t wait) {
  for (auto& h : held_) {
    if (h.wait != wait || h.answered || !is_wait(h))
      continue;
    h.answered = true;
    const auto& head = held_.front();
    out_.answer(wait, wait_answer::fail(
                        errc::timeout,
                        wait_name(h) + ": waited " + duration_string(wait_timeout_) + " behind "
                          + (head.what == held_request::kind::submit       ? op_name(head.req)
                             : head.what == held_request::kind::collective ? describe(head.coll)
                                                                           : std::string{"a read"})
                          + ", which waits for room in the store ("
                          + std::to_string(store_.live_bytes()) + " of "
                          + std::to_string(store_.capacity())
                          + " bytes are held, graph_option::store_bytes)"));
    return true;
  }
  return false;
}

// A wait for acknowledgements: a sync, a piece or a read.
bool planner::expire_pending(uint64_t wait) {
  const auto timeout = duration_string(wait_timeout_);
  auto match = [wait](const auto& p) { return p.wait == wait; };
  if (auto it = std::find_if(syncs_.begin(), syncs_.end(), match); it != syncs_.end()) {
    out_.answer(wait, wait_answer::fail(errc::timeout, "sync: no acknowledgement within " + timeout
                                                         + " from " + silent_lanes(it->entries)));
    syncs_.erase(it);
  } else if (auto it = std::find_if(pieces_.begin(), pieces_.end(), match); it != pieces_.end()) {
    out_.answer(wait, wait_answer::fail(errc::timeout, "to_vector: a piece of tensor #"
                                                         + std::to_string(it->operand)
                                                         + " not copied within " + timeout + ": "
                                                         + lanes_[it->written.lane].dev.str()
                                                         + " has not acknowledged it"));
    free_later(it->offset, it->bytes); // its copy may still run
    pieces_.erase(it);
  } else if (auto it = std::find_if(fetches_.begin(), fetches_.end(), match);
             it != fetches_.end()) {
    const auto& rec = tensors_.at(it->operand);
    const auto& by = it->shared ? rec.exported : rec.writer;
    out_.answer(wait, wait_answer::fail(errc::timeout,
                                        (it->shared ? "device_bytes: tensor #" : "to_vector: tensor #")
                                          + std::to_string(it->operand)
                                          + (it->shared ? " not exported" : " not written")
                                          + " within " + timeout + ": " + lanes_[by.lane].dev.str()
                                          + " has not acknowledged it"));
    fetches_.erase(it);
  } else {
    return false;
  }
  return true;
}

// The lanes a wait is still waiting for, and why, for the error at its deadline.
std::string planner::silent_lanes(const std::vector<uint64_t>& entries) const {
  std::string out;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const auto& ln = lanes_[i];
    if (ln.entries_done >= entries[i] || !ln.failed.empty())
      continue;
    out += (out.empty() ? "" : ", ") + ln.dev.str() + " ("
           + std::to_string(ln.entries_sent - ln.entries_done) + " entries sent, "
           + std::to_string(ln.in_flight.size()) + " batches unacknowledged)";
  }
  return out;
}

// -- waits the user's thread answers itself --------------------------------------------------------

wait_ticket planner::read_ticket(operand_id id) const {
  wait_ticket t;
  if (!board_ || stopping_ || !held_.empty())
    return t;
  auto it = tensors_.find(id);
  if (it == tensors_.end() || it->second.lane != cpu_lane || !it->second.placed
      || !it->second.failure.empty() || !lanes_[it->second.writer.lane].failed.empty())
    return t;
  t.valid = true;
  t.faults = board_->faults();
  t.lane = it->second.writer.lane;
  t.index = it->second.writer.index;
  t.offset = it->second.offset;
  return t;
}

wait_ticket planner::sync_ticket() const {
  wait_ticket t;
  if (!board_ || stopping_ || !held_.empty() || !unreported_.empty())
    return t;
  for (const auto& l : lanes_)
    if (!l.failed.empty())
      return t;
  t.valid = true;
  t.faults = board_->faults();
  t.entries = entries_now();
  return t;
}

bool planner::heard_board() const {
  if (!board_)
    return true;
  for (uint32_t l = 0; l < lanes_.size(); ++l)
    if (lanes_[l].failed.empty() && !lanes_[l].down && lanes_[l].entries_done < board_->entries(l))
      return false;
  return true;
}

bool planner::in_flight() const {
  for (const auto& ln : lanes_)
    if (ln.failed.empty() && !ln.down && ln.done < ln.sent)
      return true;
  return false;
}

} // namespace ag
