#include "actors/runtime_devices.hpp"

#include <algorithm>
#include <string>

#include "actorgraph/error.hpp"
#include "cuda/kernel_stream.hpp"

namespace ag {

namespace {

constexpr std::size_t max_node_streams = 16;

} // namespace

int cuda_ordinal(const device& d) {
  if (d.type != device::kind::cuda || !d.local())
    throw error("cuda_ordinal: " + d.str() + " is not a CUDA device of this machine");
  return cuda_ordinal(d.index);
}

std::vector<device> resolve_devices(const std::vector<device>& wanted) {
  const int gpus = cuda_device_count();
  std::vector<device> out;
  if (wanted.empty()) {
    for (int i = 0; i < gpus; ++i)
      out.push_back(device::cuda(i));
    if (out.empty())
      out = {device::sim(0), device::sim(1)};
    return out;
  }
  for (const auto& d : wanted) {
    if (d.type != device::kind::cpu && d.type != device::kind::cuda && d.type != device::kind::sim)
      throw error("device kind " + std::to_string(static_cast<int>(d.type))
                  + " is not cpu, cuda or sim");
    if (d.is_cpu())
      continue;
    if (d.index < 0)
      throw error("device " + d.str() + ": negative index");
    if (d.local() && d.type == device::kind::cuda && d.index >= gpus)
      throw error("device " + d.str() + ": only " + std::to_string(gpus)
                  + " CUDA device(s) visible to this process");
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw error("device " + d.str() + " is listed twice");
    out.push_back(d);
  }
  return out;
}

step_policy steps_of(const graph_option& opt) {
  if (opt.cuda_graphs != cuda_graphs::off && opt.cuda_graphs != cuda_graphs::automatic)
    throw error("graph_option::cuda_graphs " + std::to_string(static_cast<int>(opt.cuda_graphs))
                + " is neither off nor automatic");
  if (opt.cuda_graph_after == 0)
    throw error("graph_option::cuda_graph_after 0: a step runs at least once before it is "
                "captured (its memory is set up on that run); the default is 2");
  if (opt.max_cuda_graphs == 0)
    throw error("graph_option::max_cuda_graphs 0: use cuda_graphs = off to keep none");
  step_policy p;
  p.enabled = opt.cuda_graphs == cuda_graphs::automatic;
  p.capture_after = opt.cuda_graph_after;
  p.max_graphs = opt.max_cuda_graphs;
  return p;
}

void check_node_options(const graph_option& opt) {
  if (!opt.per_device_per_process)
    throw error("devices on nodes need process mode (graph_option::per_device_per_process)");
  if (opt.node_streams > max_node_streams)
    throw error("graph_option::node_streams " + std::to_string(opt.node_streams)
                + " is more than " + std::to_string(max_node_streams));
}

} // namespace ag
