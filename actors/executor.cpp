// The executor's behaviours: the user's requests, the runners' answers, start-up and shutdown.
// What the planner asks of it is carried out in actors/executor_outbox.cpp.
#include "actors/executor.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "actors/executor_state.hpp"
#include "actors/store_fence.hpp"
#include "graph/deadline.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/ring_publisher.hpp"
#include "ipc/shm_channel.hpp"
#include "ipc/wire.hpp"

namespace ag {

namespace executor_detail {

// Every lane first; then the sockets' actors, which the children's last words pass through.
void maybe_finish_shutdown(executor_self self) {
  auto& st = self->state;
  if (!st.plan->stopping() || !st.lanes->lanes_down())
    return;
  if (!st.services_stopped) {
    st.services_stopped = true;
    st.lanes->stop_services();
  }
  if (!st.lanes->services_down())
    return;
  st.shutdown_waiter.deliver(st.shutdown_problems);
  self->quit();
}


void on_down(executor_self self, const caf::down_msg& dm) {
  auto& st = self->state;
  const auto ev = st.lanes->on_down(dm);
  if (ev.kind == lane_topology::down_kind::service && !st.plan->stopping()) {
    st.plan->fail_remote("puller stopped: "
                         + (dm.reason ? describe(dm.reason, "socket") : "exited"));
  } else if (ev.kind == lane_topology::down_kind::lane) {
    const auto dev = st.plan->lane(ev.lane).dev.str();
    const bool failed_before = !st.plan->lane(ev.lane).failed.empty();
    if (const auto& ring = st.lanes->ring(); ring && st.lanes->remote(ev.lane)) {
      ring->drop(ev.lane - 1); // the ring no longer waits for its child
      resend_later(self);
    }
    st.plan->lane_down(ev.lane, "runner of " + dev + " stopped: "
                                  + (dm.reason ? describe(dm.reason, dev) : "exited"));
    if (st.plan->stopping() && !failed_before && dm.reason && dm.reason.category() == error_category
        && dm.reason.code() != static_cast<uint8_t>(errc::runner_exited))
      // a healthy lane's child that exited with a code, or had to be killed (one killed for a
      // failure was reported then)
      st.shutdown_problems += (st.shutdown_problems.empty() ? "" : "; ")
                              + describe(dm.reason, dev);
  }
  answer_stats(self);
  maybe_finish_shutdown(self);
}

// Spawns the planner and the lanes' actors, each runner monitored; they never outlive the
// executor, whichever way it ends.
void start(executor_self self, executor_setup& setup) {
  auto& st = self->state;
  auto devices = setup.devices;
  devices.insert(devices.begin(), device::cpu());
  setup.plan.devices = devices;
  setup.plan.process = setup.process.has_value();
  if (setup.process && setup.process->channel) // no broadcast larger than a ring frame
    setup.plan.max_broadcast_bytes =
      setup.process->channel->ring().max_message() - wire::header_size;
  topology_setup topo;
  topo.devices = devices;
  topo.store_base = setup.plan.store_base;
  topo.store_size = setup.plan.store_size;
  topo.process = setup.process;
  topo.start_timeout = setup.start_timeout;
  topo.stop_timeout = stop_timeout(setup.plan.wait_timeout);
  topo.trace = setup.plan.trace;
  topo.timeline = setup.plan.timeline;
  topo.board = setup.plan.board;
  topo.peers = !setup.plan.peers.empty() && !setup.process; // children use exports instead
  topo.linger = setup.linger;
  topo.streams = setup.streams;
  topo.steps = setup.steps;
  topo.exports.spin = std::max(setup.linger, topo.exports.spin); // a sibling about to write
  topo.exports.timeout = setup.plan.wait_timeout;
  st.gate = flush_gate{setup.linger};
  st.start_timeout = setup.start_timeout;
  if (setup.plan.board != nullptr)
    st.seat = setup.plan.board->seat();
  if (auto& tl = setup.plan.timeline) {
    st.timeline = tl;
    tl->name_process(::getpid(), "controller");
    tl->name_track(::getpid(), 0, "executor");
  }
  // The planner first: the trace's first record, before the first Hello is recorded.
  st.plan = std::make_unique<planner>(std::move(setup.plan), st.out);
  st.lanes = std::make_unique<lane_topology>(self, std::move(topo));
  say_hello(self);
  self->set_down_handler([self](caf::down_msg& dm) { on_down(self, dm); });
  self->attach_functor([actors = st.lanes->spawned()](const caf::error&) {
    for (auto& a : *actors)
      caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  });
  if (!no_deadline(setup.start_timeout))
    self->delayed_send(self, setup.start_timeout, wait_ready_atom::value, start_deadline);
}

// What both states answer alike: the user's reads, syncs and start-up waits (which the planner
// answers with an error once it is stopping), stats, and the runners' answers.
caf::result<uint64_t> fetch(executor_self self, operand_id id) {
  self->state.gate.wait_arrived();
  self->state.plan->fetch(self->state.wait_for(self, true), id);
  return caf::delegated<uint64_t>{};
}

caf::result<uint64_t> share(executor_self self, operand_id id) {
  self->state.gate.wait_arrived();
  self->state.plan->share(self->state.wait_for(self, true), id);
  return caf::delegated<uint64_t>{};
}

caf::result<uint64_t> fetch_piece(executor_self self, operand_id id, uint64_t first,
                                  uint64_t count) {
  self->state.plan->fetch_piece(self->state.wait_for(self, true), id, first, count);
  return caf::delegated<uint64_t>{};
}

caf::result<void> sync(executor_self self) {
  self->state.gate.wait_arrived();
  self->state.plan->sync(self->state.wait_for(self, false));
  return caf::delegated<void>{};
}

caf::result<void> wait_ready(executor_self self) {
  self->state.plan->wait_ready(self->state.wait_for(self, false));
  return caf::delegated<void>{};
}

// Answered once the planner has heard every acknowledgement the board shows (a sync answered on
// the board returns before the executor hears the acknowledgements it watched).
caf::result<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t> stats(executor_self self) {
  auto& st = self->state;
  if (!st.plan->heard_board()) {
    st.stats_waiters.push_back(self->make_response_promise());
    return caf::delegated<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>{};
  }
  const auto s = st.plan->stats();
  return {s.store_live, s.device_live, s.batches, s.operators, s.restarts};
}

void answer_stats(executor_self self) {
  auto& st = self->state;
  if (st.stats_waiters.empty() || !st.plan->heard_board())
    return;
  const auto s = st.plan->stats();
  for (auto& rp : st.stats_waiters)
    rp.deliver(s.store_live, s.device_live, s.batches, s.operators, s.restarts);
  st.stats_waiters.clear();
}

void done(executor_self self, uint32_t l, uint64_t ops_done, uint64_t entries, uint64_t live) {
  store_fence::acquire(); // what the runner did with its store ranges, before they are reused
  self->state.plan->done(l, ops_done, live, entries);
  answer_stats(self);
}

void failed(executor_self self, uint32_t l, uint64_t index, const std::string& what) {
  store_fence::acquire();
  self->state.plan->failed(l, index, what);
  answer_stats(self);
}

executor_actor::behavior_type stopping(executor_self self);

// The shared-memory path: once the mailbox is empty, the executor watches it a while before it
// sleeps on it, so that the next message of a busy runtime (the next operator, a read, a runner's
// acknowledgement) finds it awake: no wake-up on the path of a wait. True when one came within
// `window` (default: the executor's linger, as long as lingers have paid, ipc/spin_learner.hpp).
// Either only while a CPU is free for the threads it waits for (ipc/spin_census.hpp).
bool linger(executor_self self, std::optional<std::chrono::nanoseconds> window = std::nullopt) {
  auto& st = self->state;
  return spin_until([self] { return !self->mailbox().empty(); },
                    window ? spin_policy{*window, st.seat}
                           : spin_policy{st.gate.linger(), st.seat, &st.learner});
}

// How long the executor naps for an answer a user's thread waits for, and each nap.
constexpr std::chrono::microseconds nap_bound{1000};
constexpr std::chrono::microseconds nap_length{10};

// After a dispatch that a user's thread waits on, once a linger found nothing (the round trip
// outlasts it: a child on the sockets or on a node): the executor naps, looking at its mailbox
// between naps, for up to nap_bound, so that the answer and the user's next operator behind it
// find it awake. On a virtual machine's idle CPU a thread asleep for longer than about 100 us
// wakes 30 to 90 us late (measured on the H200 machine: docs/BENCHMARKS.md). Only where
// spinning is on (spin_wait > 0) and a CPU is free for it (the census), and not where the runners
// answer on the board themselves: there a linger covers the round trip, and a seat is better
// spent on the user's thread, whose wait the answer ends.
void nap_for_answer(executor_self self) {
  auto& st = self->state;
  if (!st.gate.awaited() || st.gate.linger().count() <= 0 || st.plan->runners_see_board()
      || !st.plan->in_flight())
    return;
  thread_local const bool precise = (nap_precisely(), true);
  (void)precise;
  nap_until([self] { return !self->mailbox().empty(); }, st.seat, nap_bound, nap_length);
}

// starting and running (the planner tells them apart: a wait for start-up is answered once every
// runner is ready; operators submitted meanwhile are queued).
executor_actor::behavior_type running(executor_self self, std::chrono::milliseconds start_timeout) {
  auto& plan = *self->state.plan;
  return {
    [=, &plan](submit_atom, op_request& req) {
      self->state.mark("submit");
      plan.submit(req);
    },
    [&plan](submit_atom, collective_request& req) { plan.submit(req); },
    [&plan](release_atom, operand_id id) {
      store_fence::acquire(); // a user's thread's last reads of the range
      plan.release(id);
    },
    [=](fetch_atom, operand_id id) { return fetch(self, id); },
    [=](share_atom, operand_id id) { return share(self, id); },
    [=](fetch_atom, operand_id id, uint64_t first, uint64_t count) {
      return fetch_piece(self, id, first, count);
    },
    [&plan](unstage_atom, uint64_t offset, uint64_t bytes) {
      store_fence::acquire();
      plan.unstage(offset, bytes);
    },
    [=](sync_atom) { return sync(self); },
    [=](wait_ready_atom) { return wait_ready(self); },
    [=, &plan](flush_atom) {
      note_ring_reads(self);
      auto& st = self->state;
      const auto window = st.gate.hold(plan.releases_alone());
      st.mark(window.count() > 0 ? "flush held" : "flush");
      if (window.count() > 0 && linger(self, window)) {
        st.gate.held();
        self->send(self, flush_atom::value); // after what just came
        return;
      }
      st.gate.dispatched();
      plan.flush();
      if (!linger(self))
        nap_for_answer(self);
    },
    [=](expire_atom, uint64_t) { deadlines_passed(self); }, // the wait it was armed for, or 0
    [=, &plan](progress_atom) {
      note_ring_reads(self);
      plan.check_progress();
    },
    [=, &plan](wait_ready_atom, start_deadline_t) { plan.start_deadline(start_timeout); },
    [=, &plan](wait_ready_atom, start_deadline_t, uint32_t l, uint32_t generation) {
      plan.restart_deadline(l, generation, start_timeout);
    },
    [=, &plan](ready_atom, uint32_t l) {
      if (plan.ready(l))
        self->state.lanes->started();
    },
    [=](done_atom, uint32_t l, uint64_t ops_done, uint64_t entries, uint64_t live) {
      self->state.mark("done");
      self->state.gate.answered();
      done(self, l, ops_done, entries, live);
      linger(self);
    },
    [=](failed_atom, uint32_t l, uint64_t index, std::string& what) {
      self->state.gate.answered();
      failed(self, l, index, what);
    },
    [=, &plan](received_atom, uint32_t l, uint64_t count) {
      if (self->state.lanes->ring()) { // a wake-up: the ring's cursors say more
        note_ring_reads(self);
        resend_later(self);
      } else {
        plan.received(l, count);
      }
    },
    [=](stats_atom) { return stats(self); },
    [=, &plan](ticket_atom, operand_id id, const ticket_slot_ptr& slot) {
      self->state.mark("ticket");
      plan.break_step();
      slot->fill(plan.read_ticket(id));
      self->state.gate.wait_arrived();
      linger(self);
    },
    [=, &plan](ticket_atom, const ticket_slot_ptr& slot) {
      self->state.mark("ticket");
      plan.break_step();
      slot->fill(plan.sync_ticket());
      self->state.gate.wait_arrived();
      linger(self);
    },
    [=](resend_atom) { resend(self); },
    [=](hello_atom) { say_hello(self); },
    [&plan](submit_atom, std::vector<submission>& run, bool mark) {
      store_fence::acquire(); // a user's thread's last reads of what it releases
      for (auto& s : run) {
        if (s.released != 0)
          plan.release(s.released);
        else
          plan.submit(s.req);
      }
      if (mark)
        plan.mark_step();
    },
    [=, &plan](shutdown_atom) -> caf::result<std::string> {
      auto& st = self->state;
      st.shutdown_waiter = self->make_response_promise();
      plan.stop();
      st.lanes->stop_lanes();
      resend_later(self); // a Destroy that waits on the ring for room
      self->become(stopping(self));
      maybe_finish_shutdown(self);
      return caf::delegated<std::string>{};
    },
  };
}

// stopping: every runner was told to stop; it quits once every lane and then each socket actor
// is down (on_down). Waits are answered with errors; what is submitted now runs nowhere; the
// runners' last answers are still taken (the trace records them).
executor_actor::behavior_type stopping(executor_self self) {
  auto& plan = *self->state.plan;
  return {
    [](submit_atom, op_request&) {},
    [](submit_atom, collective_request&) {},
    [](release_atom, operand_id) {},
    [=](fetch_atom, operand_id id) { return fetch(self, id); },
    [=](share_atom, operand_id id) { return share(self, id); },
    [=](fetch_atom, operand_id id, uint64_t first, uint64_t count) {
      return fetch_piece(self, id, first, count);
    },
    [](unstage_atom, uint64_t, uint64_t) {},
    [=](sync_atom) { return sync(self); },
    [=](wait_ready_atom) { return wait_ready(self); },
    [](flush_atom) {},
    [](expire_atom, uint64_t) {},
    [](progress_atom) {},
    [](wait_ready_atom, start_deadline_t) {},
    [](wait_ready_atom, start_deadline_t, uint32_t, uint32_t) {},
    [&plan](ready_atom, uint32_t l) { plan.ready(l); },
    [=](done_atom, uint32_t l, uint64_t ops_done, uint64_t entries, uint64_t live) {
      done(self, l, ops_done, entries, live);
    },
    [=](failed_atom, uint32_t l, uint64_t index, std::string& what) {
      failed(self, l, index, what);
    },
    [&plan](received_atom, uint32_t l, uint64_t count) { plan.received(l, count); },
    [=](stats_atom) { return stats(self); },
    [](ticket_atom, operand_id, const ticket_slot_ptr& slot) { slot->fill({}); },
    [](ticket_atom, const ticket_slot_ptr& slot) { slot->fill({}); },
    [](submit_atom, std::vector<submission>&, bool) {},
    [=](resend_atom) { resend(self); },
    [](hello_atom) {},
    [](shutdown_atom) -> caf::result<std::string> {
      return make_error(errc::bad_request, "shutdown: the executor is stopping already");
    },
  };
}

executor_actor::behavior_type executor_fun(executor_self self, executor_setup setup) {
  start(self, setup);
  return running(self, setup.start_timeout);
}

} // namespace executor_detail

executor_actor spawn_executor(caf::actor_system& sys, executor_setup setup) {
  // With nodes, on the scheduler's threads. Nodes that hold a handle to the executor make CAF's
  // middleman tell them of its end; that message, with the executor as its sender, was seen left
  // behind as the middleman stopped (a mailbox element nothing pointed to any more, 2 runs in
  // 200). Its reference kept the executor alive, and ~actor_system waits for every detached actor
  // to be destroyed: the runtime's destruction hung. A scheduled actor left alive hangs nothing.
  if (setup.process && setup.process->network)
    return sys.spawn(executor_detail::executor_fun, std::move(setup));
  return sys.spawn<caf::detached>(executor_detail::executor_fun, std::move(setup));
}

} // namespace ag
