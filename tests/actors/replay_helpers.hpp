// Replaying a recorded trace from a test: its own small actor system, the transport under test,
// a 20 s deadline on every wait.
#pragma once

#include <chrono>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actors/replay.hpp"
#include "ipc/trace.hpp"
#include "tests/actors/process_helpers.hpp"

namespace ag::test {

inline ag::replay_report replay_file(const ag::trace::file& t, bool process, double tolerance = 0) {
  caf::actor_system_config cfg;
  cfg.set("scheduler.max-threads", 2);
  cfg.set("logger.console", caf::atom("none"));
  caf::actor_system sys{cfg};
  ag::replay_options opt;
  opt.process = process;
  opt.tolerance = tolerance;
  opt.timeout = std::chrono::seconds{20};
  opt.transport = transport_under_test();
  return ag::replay(sys, t, opt);
}

} // namespace ag::test
