// peer_directory: the device operands of the lanes of one process that are peers of each other
// (CUDA GPUs with peer access, sim devices with graph_option::sim_peers), so that one lane's
// runner can read another's operand where it lies: the direct moves and collectives (peer_copy,
// peer_sum in graph/op.hpp). Each runner publishes what it creates and withdraws what it frees;
// the planner orders every read after the operand's writer and every free after its readers, so
// an entry found is valid for the whole operator that reads it. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorgraph/device.hpp"
#include "graph/op.hpp"

namespace ag {

class peer_directory {
public:
  struct operand {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    device dev; // where the memory is
  };

  // Lanes 0 .. lanes - 1. Each lane's operands have a lock of their own: a runner publishing what
  // it makes contends only with the readers of its own lane.
  explicit peer_directory(std::size_t lanes) : lanes_(lanes) {}

  void publish(uint32_t lane, operand_id id, operand o);
  void withdraw(uint32_t lane, operand_id id) noexcept;

  // The operand, or ag::error naming `what` (the operator that reads it) when lane has none.
  operand find(uint32_t lane, operand_id id, const std::string& what) const;

  std::size_t size() const;

private:
  struct lane_operands {
    mutable std::mutex mtx;
    std::unordered_map<operand_id, operand> operands;
  };
  std::vector<lane_operands> lanes_;
};

} // namespace ag
