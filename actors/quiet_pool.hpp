// quiet_pool: the scheduler settings of every actor system actorgraph makes (the runtime's own,
// ag-runner's, ag-replay's). Every actor on the path of an operator is detached, so the pool needs
// two threads; and an idle worker sleeps on its condition variable (any new job wakes it at once)
// for a second at a time instead of CAF's 10 ms: those wake-ups alone, two workers in each
// process, were most of what an idle runtime cost (docs/BENCHMARKS.md, idle CPU), and on a
// virtual machine each costs tens of microseconds. What a longer sleep delays is only a worker
// stealing a job queued behind a busy one.
#pragma once

#include <chrono>

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/timespan.hpp>

namespace ag {

inline constexpr std::chrono::milliseconds idle_worker_sleep{1000};

inline void quiet_pool(caf::actor_system_config& cfg) {
  cfg.set("scheduler.max-threads", 2);
  cfg.set("work-stealing.relaxed-sleep-duration", caf::timespan{idle_worker_sleep});
  cfg.set("logger.console", caf::atom("none"));
}

} // namespace ag
