#include "actors/peer_lanes.hpp"

#include "cuda/kernel_stream.hpp"

namespace ag {

std::vector<std::vector<bool>> peer_lanes(const std::vector<device>& lanes, peer_choice choice) {
  if (!choice.peer_transfers)
    return {};
  auto direct = [&](const device& a, const device& b) {
    if (a.is_cpu() || b.is_cpu() || !a.local() || !b.local() || a.type != b.type)
      return false;
    if (a.type == device::kind::sim) // a child's sim memory is its own
      return choice.sim_peers && !choice.process;
    return cuda_peer_access(a.index, b.index) && cuda_peer_access(b.index, a.index);
  };
  std::vector<std::vector<bool>> peers(lanes.size(), std::vector<bool>(lanes.size(), false));
  bool any = false;
  for (std::size_t a = 0; a < lanes.size(); ++a)
    for (std::size_t b = 0; b < lanes.size(); ++b)
      if (a != b && direct(lanes[a], lanes[b]))
        any = peers[a][b] = true;
  return any ? peers : std::vector<std::vector<bool>>{};
}

} // namespace ag
