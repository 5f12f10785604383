// peer_lanes: which device lanes of a runtime have a direct path between them (the planner's
// planner_setup::peers): CUDA GPUs of this machine with peer access to each other (or lanes that
// share a GPU), in thread mode or as child processes (through CUDA IPC), and, in thread mode with
// sim_peers, sim devices; never the cpu or a node.
#pragma once

#include <vector>

#include "actorgraph/device.hpp"

namespace ag {

struct peer_choice {
  bool process = false;       // the device lanes run in child processes
  bool peer_transfers = true; // graph_option::peer_transfers
  bool sim_peers = false;     // graph_option::sim_peers
};

// lanes[0] is the cpu. peers[a][b]: lane a may read lane b's operands where they lie. Empty when
// no pair has a direct path.
std::vector<std::vector<bool>> peer_lanes(const std::vector<device>& lanes, peer_choice choice);

} // namespace ag
