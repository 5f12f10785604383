// The planner's watch on the children: how far each is behind in reading its broadcasts (which
// holds the user's threads back past max_queued_bytes) and the watchdog that fails a child that
// reads nothing for progress_timeout and is not busy inside an operator (actors/child_pulse.hpp).
#include <algorithm>

#include "actors/flow_control.hpp"
#include "actors/planner.hpp"
#include "graph/deadline.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/wire.hpp"

namespace ag {

namespace {

// The progress watchdog looks this often at children that are behind.
std::chrono::milliseconds progress_slice(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 4, std::chrono::milliseconds{10}, std::chrono::milliseconds{250});
}

} // namespace

void planner::sent_broadcast(wire::execute_msg&& m) {
  const auto now = std::chrono::steady_clock::now();
  if (!tracks_delivery_) // a child that had read everything starts its watch now
    for (auto& ln : lanes_)
      if (ln.remote && ln.broadcasts_received >= window_.seq())
        ln.last_progress = now;
  window_.sent(wire::header_size + wire::encoded_size(m)); // what the PUB socket queues
  out_.broadcast(std::move(m));
  check_queued();
  schedule_progress_check();
}

// The PUB socket queues for a child without limit (sndhwm = 0): while one is more than
// max_queued_bytes behind, the user's threads wait before submitting more. A child that is
// behind but reading is never failed for it; one that reads nothing is, by the watchdog.
void planner::check_queued() {
  uint64_t read_by_all = window_.seq();
  std::string over;
  for (const auto& ln : lanes_) {
    if (!ln.remote || !ln.failed.empty())
      continue;
    const uint64_t behind = window_.behind_bytes(ln.broadcasts_received);
    if (behind > max_queued_bytes_ && over.empty() && !ln.restarting) // it reads once ready
      over = ln.dev.str() + " is " + std::to_string(behind)
             + " bytes behind in reading its broadcasts (graph_option::max_queued_bytes = "
             + std::to_string(max_queued_bytes_) + ")";
    read_by_all = std::min(read_by_all, ln.broadcasts_received);
  }
  window_.forget(read_by_all);
  if (!flow_)
    return;
  if (over.empty())
    flow_->resume();
  else
    flow_->hold(std::move(over));
}

void planner::schedule_progress_check() {
  if (progress_check_scheduled_ || no_deadline(progress_timeout_))
    return;
  progress_check_scheduled_ = true;
  out_.check_progress_after(progress_slice(progress_timeout_));
}

// The watchdog: a child behind in reading its broadcasts that read none and acknowledged nothing
// for progress_timeout is failed and killed (which drops what the PUB socket queued for it).
// A child that is slow but reading is left alone, however far behind; so is one that the board
// shows inside an operator with its heartbeat going (one thread reads and runs, so a long
// operator holds its reading back, and only SIGSTOP or death stops the beat). On the
// shared-memory path the child writes both on the board itself; on the sockets its main thread
// pulses them and the puller writes them there (actors/pulse_pusher.hpp).
void planner::check_progress() {
  progress_check_scheduled_ = false;
  const auto now = std::chrono::steady_clock::now();
  bool watching = false;
  for (uint32_t l = 0; l < lanes_.size(); ++l) {
    auto& ln = lanes_[l];
    if (!ln.remote || !ln.failed.empty() || ln.down || ln.restarting) // start_timeout's
      continue;
    const auto sign = ln.pulse.look(ln.broadcasts_received, readable_broadcasts(),
                                    board_ ? board_->running_at(l) : 0,
                                    board_ ? board_->beats(l) : 0);
    if (sign == child_pulse::sign::caught_up)
      continue;
    // Inside an operator, or waiting for another child's export (the exporter is the one to
    // watch): this child's watch restarts.
    const bool busy = sign == child_pulse::sign::executing || waits_for_export(l);
    if (busy)
      progressed(l);
    if (busy || now - ln.last_progress < progress_timeout_) {
      watching = true;
      continue;
    }
    fail_lane(l, ln.dev.str() + " made no progress for " + duration_string(progress_timeout_)
                   + " (it read none of " + std::to_string(window_.seq() - ln.broadcasts_received)
                   + " broadcasts, " + std::to_string(window_.behind_bytes(ln.broadcasts_received))
                   + " bytes, graph_option::progress_timeout); its child is killed");
  }
  if (watching)
    schedule_progress_check();
}

void planner::delivered(uint64_t count) {
  tracks_delivery_ = true;
  if (count <= delivered_)
    return;
  const auto now = std::chrono::steady_clock::now();
  for (auto& ln : lanes_) // a child that had read everything there starts its watch now
    if (ln.remote && ln.broadcasts_received >= delivered_)
      ln.last_progress = now;
  delivered_ = count;
  schedule_progress_check();
}

uint64_t planner::readable_broadcasts() const noexcept {
  return tracks_delivery_ ? std::min(delivered_, window_.seq()) : window_.seq();
}

// True when lane l was sent a direct read of an export that has not run yet: its runner may be
// waiting for it, reading no broadcasts, for as long as the exporter takes.
bool planner::waits_for_export(uint32_t l) const {
  return std::any_of(direct_reads_.begin(), direct_reads_.end(), [&](const direct_read& r) {
    return r.reader.lane == l && lanes_[l].sent >= r.reader.index
           && lanes_[l].done < r.reader.index && r.exported.index > 0
           && lanes_[r.exported.lane].done < r.exported.index
           && lanes_[r.exported.lane].failed.empty();
  });
}

// Any word from a remote lane's child shows that it makes progress.
void planner::progressed(uint32_t l) { lanes_[l].last_progress = std::chrono::steady_clock::now(); }

} // namespace ag
