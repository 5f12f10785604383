#include "actors/board_waits.hpp"

#include <algorithm>

#include "actorgraph/error.hpp"
#include "graph/deadline.hpp"
#include "graph/interrupts.hpp"

namespace ag {

namespace {

// A user's thread's waits on the board, with what its earlier waits taught about spinning (one
// learner per thread: waits of one thread are alike, those of several threads need not be).
spin_policy learning(spin_policy spin) {
  thread_local spin_learner learner;
  spin.learner = &learner;
  return spin;
}

} // namespace

board_waits::board_waits(completion_board& board, std::vector<std::string> lanes,
                         std::chrono::milliseconds wait_timeout, spin_policy spin)
  : board_(board), lanes_(std::move(lanes)), wait_timeout_(wait_timeout), spin_(spin) {}

bool board_waits::take(ticket_slot& slot, const std::string& what) const {
  if (!detail::interruptible())
    return slot.wait(deadline_after(std::min(patience, wait_timeout_)), spin_)
           && slot.ticket().valid;
  // A thread that may be interrupted keeps waiting for a busy executor's ticket, in slices: asked
  // the ordinary way, the executor's answer could not be interrupted.
  const auto deadline = deadline_after(wait_timeout_);
  while (!slot.wait(detail::slice_end(deadline), spin_)) {
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    detail::check_interrupt(what);
  }
  return slot.ticket().valid;
}

std::optional<uint64_t> board_waits::read(ticket_slot& slot, const std::string& what) const {
  if (!take(slot, what))
    return std::nullopt;
  const auto& t = slot.ticket();
  const auto deadline = deadline_after(wait_timeout_);
  for (;;) { // in slices when the thread may be interrupted
    switch (board_.wait_op(t.lane, t.index, t.faults, detail::slice_end(deadline), learning(spin_))) {
      case completion_board::outcome::done:
        return t.offset;
      case completion_board::outcome::stale:
        return std::nullopt;
      case completion_board::outcome::timed_out:
        break;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      break;
    detail::check_interrupt(what);
  }
  throw error(what + ": not written within " + duration_string(wait_timeout_) + ": "
              + lanes_.at(t.lane) + " has not acknowledged it (operator " + std::to_string(t.index)
              + ", " + std::to_string(board_.ops(t.lane)) + " acknowledged)");
}

bool board_waits::sync(ticket_slot& slot) const {
  if (!take(slot, "sync"))
    return false;
  const auto& t = slot.ticket();
  const auto deadline = deadline_after(wait_timeout_);
  for (;;) {
    switch (board_.wait_entries(t.entries, t.faults, detail::slice_end(deadline), learning(spin_))) {
      case completion_board::outcome::done:
        return true;
      case completion_board::outcome::stale:
        return false;
      case completion_board::outcome::timed_out:
        break;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      break;
    detail::check_interrupt("sync");
  }
  std::string silent;
  for (uint32_t l = 0; l < t.entries.size(); ++l)
    if (board_.entries(l) < t.entries[l])
      silent += (silent.empty() ? "" : ", ") + lanes_.at(l) + " ("
                + std::to_string(t.entries[l] - board_.entries(l)) + " entries unacknowledged)";
  throw error("sync: no acknowledgement within " + duration_string(wait_timeout_) + " from "
              + silent);
}

} // namespace ag
