#include "cuda/peer_directory.hpp"

#include "actorgraph/error.hpp"

namespace ag {

void peer_directory::publish(uint32_t lane, operand_id id, operand o) {
  if (lane >= lanes_.size())
    throw error("peer directory: no lane " + std::to_string(lane) + " (it holds "
                + std::to_string(lanes_.size()) + " lanes)");
  auto& l = lanes_[lane];
  std::lock_guard<std::mutex> lock{l.mtx};
  l.operands[id] = o;
}

void peer_directory::withdraw(uint32_t lane, operand_id id) noexcept {
  if (lane >= lanes_.size())
    return;
  auto& l = lanes_[lane];
  std::lock_guard<std::mutex> lock{l.mtx};
  l.operands.erase(id);
}

peer_directory::operand peer_directory::find(uint32_t lane, operand_id id,
                                             const std::string& what) const {
  if (lane < lanes_.size()) {
    const auto& l = lanes_[lane];
    std::lock_guard<std::mutex> lock{l.mtx};
    if (auto it = l.operands.find(id); it != l.operands.end())
      return it->second;
  }
  throw error(what + ": lane " + std::to_string(lane) + " has no operand #" + std::to_string(id)
              + " this process can read (not a peer lane of this process, or not made yet)");
}

std::size_t peer_directory::size() const {
  std::size_t n = 0;
  for (const auto& l : lanes_) {
    std::lock_guard<std::mutex> lock{l.mtx};
    n += l.operands.size();
  }
  return n;
}

} // namespace ag
