// The planner's restarts (graph_option::max_restarts): a remote lane whose child is gone, after its
// failure spread as any lane's does (planner_failure.cpp), is given a new child. What the dead
// child held is lost for good, and says so; the lane's counts go on from where they stood, every
// operator issued before counted as run (or lost), so that every dependency, credit and store
// range that named them is settled; operators submitted from now on wait on the lane for the new
// child's Ready.
#include <unistd.h>

#include "actors/planner.hpp"
#include "graph/deadline.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/timeline.hpp"

namespace ag {

// What lane l's failure tainted (its tensors, and what was computed from them) says that it was
// lost in the restart of its device.
void planner::relabel_lost(uint32_t l) {
  const auto& ln = lanes_[l];
  const std::string why = ln.failed;
  const std::string lost =
    why + "; the tensor was lost when " + ln.dev.str() + " was restarted (restart "
    + std::to_string(ln.restarts + 1) + " of " + std::to_string(max_restarts_)
    + ", graph_option::max_restarts)";
  for (auto& [id, rec] : tensors_)
    if (rec.failure == why)
      rec.failure = lost;
}

// Lane l's child is gone (reaped) and its failure has spread: if the lane was up once and has
// restarts left, a new child is started for it.
void planner::maybe_restart(uint32_t l) {
  auto& ln = lanes_[l];
  if (stopping_ || !ln.remote || !ln.down || ln.failed.empty() || ln.restarts >= max_restarts_
      || (!ln.ready && !ln.restarting)) // a child that never came up fails start-up instead
    return;
  relabel_lost(l);
  ++ln.restarts;
  ++restarts_;
  if (timeline_) {
    const auto now = timeline::clock::now();
    timeline_->span(::getpid(), 0, "restart", "executor", now, now,
                    {{"lane", std::to_string(l), true},
                     {"device", ln.dev.str(), false},
                     {"restart", std::to_string(ln.restarts), true},
                     {"why", ln.failed, false}});
  }
  // Everything issued before counts as run: what it wrote is lost, what waited for it was settled
  // by the failure, and the new child's batches go on from these counts.
  ln.failed.clear();
  ln.down = false;
  ln.ready = false;
  ln.restarting = true;
  ln.sent = ln.done = ln.issued;
  ln.entries_sent = ln.entries_done = ln.entries;
  ln.in_flight.clear();
  ln.step_ends.clear();
  ln.device_live_bytes = 0;
  ln.broadcasts_received = window_.seq();
  ln.received_base = 0;
  ln.pulse = child_pulse{};
  progressed(l);
  if (board_) // before any of the new child's counts; what waited for the old ones is met
    board_->restarted(l, ln.issued, ln.entries);
  out_.restart(l, ln.restarts, ln.entries);
}

void planner::restart_deadline(uint32_t l, uint32_t generation,
                               std::chrono::milliseconds start_timeout) {
  if (l >= lanes_.size() || stopping_)
    return;
  auto& ln = lanes_[l];
  if (!ln.restarting || ln.restarts != generation || !ln.failed.empty())
    return;
  fail_lane(l, ln.dev.str() + ": its child, started again after a failure (restart "
                 + std::to_string(generation) + "), was not ready within "
                 + duration_string(start_timeout) + " (graph_option::start_timeout)");
}

} // namespace ag
