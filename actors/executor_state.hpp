// executor_state: the executor actor's state and the planner_outbox through which it carries out
// what its planner asks, shared by the executor's two files: actors/executor.cpp (its behaviours:
// the user's requests, the runners' answers, start-up and shutdown) and actors/executor_outbox.cpp
// (batches, broadcasts on the ring or the sockets, kills, restarts, answers and their deadlines).
// Internal to the executor.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include <caf/all.hpp>

#include "actors/executor.hpp"
#include "actors/flush_gate.hpp"
#include "actors/lane_topology.hpp"
#include "actors/planner.hpp"
#include "actors/protocol.hpp"
#include "actors/wait_deadlines.hpp"
#include "ipc/futex_wait.hpp"
#include "ipc/spin_learner.hpp"
#include "ipc/timeline.hpp"

namespace ag::executor_detail {

struct executor_state;
using executor_self = executor_actor::stateful_pointer<executor_state>;

// Carries out what the planner asks, as messages.
class executor_outbox final : public planner_outbox {
public:
  explicit executor_outbox(executor_self self) : self_(self) {}

  void run(uint32_t lane, batch b) override;
  void broadcast(wire::execute_msg m) override;
  void kill(uint32_t lane) override;
  void answer(uint64_t wait, wait_answer a) override;
  void flush_soon() override;
  void expire_after(uint64_t wait, std::chrono::milliseconds after) override;
  void check_progress_after(std::chrono::milliseconds after) override;
  void restart(uint32_t lane, uint32_t generation, uint64_t entries_before) override;

private:
  executor_self self_;
};

struct executor_state {
  explicit executor_state(executor_self self) : out(self) {}

  executor_outbox out;
  std::unique_ptr<planner> plan;
  std::unique_ptr<lane_topology> lanes;
  // The promises the planner answers, by its wait id; offset: a read, answered with a store
  // offset (else a sync or start-up wait, answered with unit).
  struct reply {
    caf::response_promise promise;
    bool offset = false;
  };
  std::unordered_map<uint64_t, reply> waits;
  caf::response_promise shutdown_waiter;
  std::vector<caf::response_promise> stats_waiters; // until the planner heard the board
  bool services_stopped = false;
  bool resend_scheduled = false; // a resend message is on its way
  flush_gate gate{std::chrono::nanoseconds{0}}; // and how long the executor lingers
  spin_seat_ref seat;   // under which census it spins (the board's; none: no limit)
  spin_learner learner; // how long its lingers have paid
  wait_deadlines deadlines; // of the planner's waits, behind one timer
  std::string shutdown_problems; // what went wrong as the runners stopped; empty: nothing
  std::shared_ptr<ag::timeline> timeline; // null: no instants
  std::chrono::milliseconds start_timeout{60000}; // a child's, and a restarted child's

  // An instant on the executor's track: when a message on a wait's way was taken, or a flush
  // held or went out.
  void mark(const char* what) const {
    if (!timeline)
      return;
    const auto now = timeline::clock::now();
    timeline->span(::getpid(), 0, what, "executor", now, now);
  }

  static inline const char* name = "ag.executor";

  // A promise the planner answers (through answer()) under a new wait id.
  uint64_t wait_for(executor_self self, bool offset) {
    const uint64_t id = plan->new_wait();
    waits.emplace(id, reply{self->make_response_promise(), offset});
    return id;
  }
};

// actors/executor_outbox.cpp
// A broadcast that could not be sent fails every child's lane (by a message to itself).
void broadcast_failed(executor_self self, const std::string& what);
// During start-up and restarts: a Hello every few milliseconds.
void say_hello(executor_self self);
// While broadcasts wait for room on the ring: a look again soon.
void resend_later(executor_self self);
void resend(executor_self self);
// The shared-memory path: how far each child has read, for the planner.
void note_ring_reads(executor_self self);
// The deadline timer fired.
void deadlines_passed(executor_self self);

// actors/executor.cpp
// Answers the stats requests that waited for the planner to hear the board.
void answer_stats(executor_self self);

} // namespace ag::executor_detail
