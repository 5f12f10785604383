#include "actors/executor_state.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "actors/node_protocol.hpp"
#include "actors/store_fence.hpp"
#include "graph/deadline.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/ring_publisher.hpp"
#include "ipc/shm_channel.hpp"
#include "ipc/wire.hpp"

namespace ag::executor_detail {

void executor_outbox::run(uint32_t lane, batch b) {
  store_fence::release(); // the uploads stored for it
  self_->send(self_->state.lanes->stream(lane), execute_atom::value, std::move(b));
}

// A broadcast that could not be sent fails every child's lane, as a frame no lane can be blamed
// for does: by a message to itself, after the planner's dispatch that sent it has returned.
void broadcast_failed(executor_self self, const std::string& what) {
  self->send(self, failed_atom::value, no_lane, uint64_t{0}, "broadcast failed: " + what);
}

// Written here, on the ring or the sockets: no hop to another actor.
void executor_outbox::broadcast(wire::execute_msg m) {
  auto& st = self_->state;
  store_fence::release(); // the uploads stored for it
  try {
    if (!st.lanes->publish(m))
      resend_later(self_); // waits on the ring for room
  } catch (const std::exception& e) { // a node lane's read beyond the store, a socket gone
    broadcast_failed(self_, e.what());
  }
}

// During start-up: a Hello every few milliseconds, so that each child knows its connections
// are up.
void say_hello(executor_self self) {
  try {
    if (self->state.lanes->say_hello())
      self->delayed_send(self, lane_topology::hello_period, hello_atom::value);
  } catch (const std::exception& e) {
    broadcast_failed(self, e.what());
  }
}

// While broadcasts wait for room on the ring (a child behind), looks again every millisecond,
// and whenever a child reports reading or goes.
void resend_later(executor_self self) {
  auto& st = self->state;
  if (st.resend_scheduled || !st.lanes->ring() || st.lanes->ring()->flush())
    return;
  st.resend_scheduled = true;
  self->delayed_send(self, std::chrono::milliseconds{1}, resend_atom::value);
}

// The shared-memory path: how far each child has read, from the ring's cursors, for the planner's
// bound on what a child may be behind and its watchdog (a child reports it only every 20 ms).
void note_ring_reads(executor_self self) {
  auto& st = self->state;
  const auto& ring = st.lanes->ring();
  if (!ring)
    return;
  st.plan->delivered(ring->executes_written());
  for (uint32_t l = 0; l < st.lanes->lanes(); ++l)
    if (st.lanes->remote(l)) {
      const uint64_t read = ring->executes_read(l - 1);
      if (read > st.plan->lane(l).broadcasts_received)
        st.plan->received(l, read);
    }
}

void resend(executor_self self) {
  self->state.resend_scheduled = false;
  if (self->state.lanes->ring()) {
    note_ring_reads(self);
    resend_later(self);
  }
}

void executor_outbox::kill(uint32_t lane) {
  self_->send(self_->state.lanes->proxy(lane), kill_atom::value);
}

void executor_outbox::flush_soon() { self_->send(self_, flush_atom::value); }

// A node's answer to a restart of `lane`: its new child's proxy, adopted while the planner still
// waits for that restart (else it goes at once); or why there is none, which ends the restart as
// a death would.
void node_restarted(executor_self self, uint32_t lane, uint32_t generation,
                    runner_proxy_actor proxy) {
  auto& st = self->state;
  const auto& ln = st.plan->lane(lane);
  st.lanes->adopt(lane, proxy);
  if (st.plan->stopping())
    self->send(proxy, shutdown_atom::value);
  else if (!ln.restarting || ln.restarts != generation)
    self->send(proxy, kill_atom::value);
  else
    say_hello(self);
}

// A new child for a lane whose child is gone (by its node, for a node's lane); it has
// start_timeout to be ready.
void executor_outbox::restart(uint32_t lane, uint32_t generation, uint64_t entries_before) {
  auto self = self_;
  auto& st = self->state;
  if (auto node = st.lanes->node_of(lane)) {
    const auto dev = st.plan->lane(lane).dev.str();
    self->request(caf::actor_cast<node_actor>(node),
                  no_deadline(st.start_timeout) ? caf::infinite : caf::duration{st.start_timeout},
                  node_restart_atom::value, lane, generation, entries_before)
      .then(
        [=](caf::actor& proxy) {
          node_restarted(self, lane, generation, caf::actor_cast<runner_proxy_actor>(proxy));
        },
        [=](caf::error& err) {
          auto& plan = *self->state.plan;
          if (!plan.stopping() && plan.lane(lane).restarting && plan.lane(lane).restarts == generation)
            plan.lane_down(lane, describe(err, dev + ": restart " + std::to_string(generation)));
          answer_stats(self);
        });
  } else {
    try {
      st.lanes->restart(lane, generation, entries_before);
    } catch (const std::exception& e) {
      self->send(self, failed_atom::value, lane, uint64_t{0}, std::string{e.what()});
      return;
    }
    say_hello(self);
  }
  if (!no_deadline(st.start_timeout))
    self_->delayed_send(self_, st.start_timeout, wait_ready_atom::value, start_deadline, lane,
                        generation);
}

// One timer for every wait's deadline (actors/wait_deadlines.hpp), armed for the earliest.
void arm_deadline(executor_self self, std::chrono::steady_clock::time_point at, uint64_t wait) {
  if (at == std::chrono::steady_clock::time_point::max())
    return;
  self->state.deadlines.armed(at);
  const auto after = std::max(at - std::chrono::steady_clock::now(),
                              std::chrono::steady_clock::duration::zero());
  self->delayed_send(self, after, expire_atom::value, wait);
}

void executor_outbox::expire_after(uint64_t wait, std::chrono::milliseconds after) {
  const auto at = deadline_after(after);
  if (self_->state.deadlines.add(wait, at))
    arm_deadline(self_, at, wait);
}

// The deadline timer fired: every wait past its deadline expires, and the timer is armed again.
void deadlines_passed(executor_self self) {
  auto& st = self->state;
  for (const uint64_t wait : st.deadlines.fired(std::chrono::steady_clock::now()))
    st.plan->expire(wait);
  if (const auto next = st.deadlines.rearm())
    arm_deadline(self, *next, 0);
}

void executor_outbox::check_progress_after(std::chrono::milliseconds after) {
  self_->delayed_send(self_, after, progress_atom::value);
}

void executor_outbox::answer(uint64_t wait, wait_answer a) {
  self_->state.deadlines.forget(wait);
  auto& waits = self_->state.waits;
  auto it = waits.find(wait);
  if (it == waits.end())
    return;
  store_fence::release(); // the store range a read is answered with
  auto& rp = it->second.promise;
  if (a.code)
    rp.deliver(make_error(*a.code, std::move(a.what)));
  else if (it->second.offset)
    rp.deliver(a.offset);
  else
    rp.deliver(caf::unit);
  waits.erase(it);
}

} // namespace ag::executor_detail
