#include "cuda/peer_directory.hpp"

#include "actorgraph/error.hpp"

namespace ag {

void peer_directory::publish(uint32_t lane, operand_id id, operand o) {
  std::lock_guard<std::mutex> lock{mtx_};
  operands_[{lane, id}] = o;
}

void peer_directory::withdraw(uint32_t lane, operand_id id) noexcept {
  std::lock_guard<std::mutex> lock{mtx_};
  operands_.erase({lane, id});
}

peer_directory::operand peer_directory::find(uint32_t lane, operand_id id,
                                             const std::string& what) const {
  std::lock_guard<std::mutex> lock{mtx_};
  auto it = operands_.find({lane, id});
  if (it == operands_.end())
    throw error(what + ": lane " + std::to_string(lane) + " has no operand #" + std::to_string(id)
                + " this process can read (not a peer lane of this process, or not made yet)");
  return it->second;
}

std::size_t peer_directory::size() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return operands_.size();
}

} // namespace ag
