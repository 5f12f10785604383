// step_policy: graph_option::cuda_graphs and the options beside it, as every device's runner
// applies them (actors/step_cache.hpp), and as they travel to children and nodes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ag {

// graph_option::cuda_graphs and the options beside it, as a runner applies them.
struct step_policy {
  bool enabled = false;         // off: every step runs operator by operator
  uint32_t capture_after = 2;   // runs of a step before it is captured (its memory settles)
  std::size_t max_graphs = 64;  // graphs kept per device, the least recently used going first
  std::size_t min_operators = 2; // a step of fewer runs as it is: one launch is a graph's cost
  static constexpr std::size_t graphs_per_step = 8; // bindings of one step kept at once
};

} // namespace ag
