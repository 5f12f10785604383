// steps_bench: ag-bench --mode=steps (docs/BENCHMARKS.md): steps (runtime::mark_step) repeated
// with graph_option::cuda_graphs off and on, in thread and process mode, against floors measured
// in the same run: a step of K adds of 4096 floats (K = 1, 16, 64, 256) per operator, against
// back-to-back launches of the same add on a raw stream and against one CUDA graph of K adds
// launched directly; and ag-train's step (the loop marking each iteration) off and on.
#pragma once

#include <string>
#include <vector>

#include <actorgraph/device.hpp>

namespace ag::bench {

struct steps_row {
  std::string what; // "process, 64 adds per step" or "thread, ag-train step"
  std::string unit; // "us/op" or "us/step"
  double off = 0;   // graphs off
  double on = 0;    // graphs on
  double launch = 0; // the raw launch floor per add (0: none, or not for this row)
  double graph = 0;  // the direct graph's per add (0: none)
};

// Measures on `where` (cuda:N; sim:N for the figures without floors). quick: few steps (the
// ctest run on sim). timeline: when not empty, each mode's runtime with graphs writes its
// timeline to timeline + ".thread.json" or ".process.json" (with 4096 operators per K, not 65536).
// Throws ag::error when a runtime cannot start or a result is wrong.
std::vector<steps_row> measure_steps(const ag::device& where, bool quick,
                                     const std::string& timeline = {});

} // namespace ag::bench
