// What a runtime starts with: its devices, resolved and checked, and the options nodes need.
#pragma once

#include <vector>

#include "actorgraph/device.hpp"
#include "actorgraph/graph_option.hpp"
#include "actors/step_policy.hpp"

namespace ag {

// "auto" (empty) -> every visible CUDA GPU, else sim:0,sim:1; cpu is implicit and dropped;
// CUDA devices must exist. ag::error naming a bad or repeated device.
std::vector<device> resolve_devices(const std::vector<device>& wanted);

// With nodes: the options that go with them (node_setup checks the nodes themselves).
void check_node_options(const graph_option& opt);

// What graph_option::cuda_graphs and the options beside it ask of every device's runner; ag::error
// naming the option that is out of range.
step_policy steps_of(const graph_option& opt);

} // namespace ag
