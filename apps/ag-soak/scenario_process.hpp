// scenario_process: one scenario of ag-soak run in a fresh process (this program again, from
// /proc/self/exe), with a deadline; its one JSON line of figures collected from its stdout.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace ag::soak {

struct scenario_outcome {
  int exit_code = -1;      // the process's, when it exited
  int signal = 0;          // what ended it, when a signal did
  bool timed_out = false;  // the deadline passed and it was killed
  std::string line;        // its JSON line (the last line of stdout that begins with '{')
  std::string problem;     // why it could not be started or waited for, or how it ended badly
  double wall_s = 0;
};

// Runs this program with `args` (argv[0] excluded) and waits up to `deadline` for it to end. Past
// the deadline it gets SIGTERM (its stop signals remove its children), then SIGKILL 5 s later.
// The process dies with this one (PR_SET_PDEATHSIG). Other lines it prints are passed through.
scenario_outcome run_scenario_process(const std::vector<std::string>& args,
                                      std::chrono::seconds deadline);

} // namespace ag::soak
