// Steps (runtime::mark_step): a lane's operators of one step leave in one batch, whatever the
// executor's timing, so that a runner sees the same batch again and can replay it (a CUDA graph).
#include <algorithm>
#include <cstdint>
#include <utility>

#include "actors/flow_control.hpp"
#include "actors/planner.hpp"

namespace ag {

namespace {

// What a step holds on a lane at most: a runner confirms by itself after 4096 operators anyway.
constexpr uint64_t step_entries_bound = 4096;

} // namespace

void planner::mark_step() {
  if (stopping_)
    return;
  if (!stepping_) {
    stepping_ = true;
    if (flow_) // half a lane's credits: a step never waits for credits only its own end frees
      max_step_entries_ =
        std::clamp<uint64_t>(flow_->bounds().ops_per_lane / 2, 1, step_entries_bound);
  }
  ++steps_;
  for (auto& ln : lanes_) {
    const uint64_t sent = ln.entries - ln.queue.size();
    const uint64_t marked = ln.step_ends.empty() ? 0 : ln.step_ends.back().first;
    if (ln.entries > std::max(sent, marked))
      ln.step_ends.emplace_back(ln.entries, step_broken_ ? 0 : steps_);
  }
  step_broken_ = false;
  schedule_flush();
}

void planner::break_step() {
  if (!stepping_ || step_broken_)
    return;
  step_broken_ = true;
  schedule_flush();
}

// A step stays open (unsent) only while nothing could wait for it: no request is held (for store
// space, or streaming in pieces or chunks behind acknowledgements), the runtime is not stopping,
// and the step is small enough on every lane.
void planner::check_open_step() {
  if (!stepping_ || step_broken_)
    return;
  bool go = !held_.empty() || stopping_;
  for (const auto& ln : lanes_) {
    const uint64_t from = ln.step_ends.empty() ? ln.entries - ln.queue.size()
                                               : ln.step_ends.back().first;
    go = go || ln.entries - std::min(ln.entries, from) > max_step_entries_;
  }
  step_broken_ = go;
}

// How many of lane ln's queued entries its next batch may take, and the step they belong to (0:
// none): those up to the end of the first marked step; without one, all of them, or none while
// the open step waits for its mark.
std::pair<uint64_t, uint64_t> planner::step_room(const plan_lane& ln) const {
  if (!stepping_)
    return {UINT64_MAX, 0};
  const uint64_t sent = ln.entries - ln.queue.size();
  for (const auto& [end, step] : ln.step_ends)
    if (end > sent)
      return {end - sent, step};
  return {step_broken_ ? UINT64_MAX : 0, 0};
}

} // namespace ag
