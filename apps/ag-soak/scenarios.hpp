// The floods ag-soak runs against a runtime, each in a process of its own so that its memory peak
// is its own (apps/ag-soak/main.cpp starts them; docs/BENCHMARKS.md, "Flooding").
#pragma once

#include <string>
#include <vector>

namespace ag::soak {

struct sizes {
  long long iterations = 0; // of the flood loops
  long long uploads = 0;    // 1 MiB from_vector calls of the uploads scenarios
};

// Every scenario a process can run, in the order ag-soak runs them: flood-thread, flood-process,
// flood-stopped, uploads-thread, uploads-process.
const std::vector<std::string>& scenario_names();

// Runs scenario `name` in this process and prints its figures as one flat JSON line on stdout
// (`"problems"` says what was wrong, empty when nothing was). Returns the exit code: 0 it ran and
// every value was right, 1 a value was wrong, the run failed or a child was missing or left over,
// 3 the runtime could not start.
int run_scenario(const std::string& name, const sizes& n);

} // namespace ag::soak
