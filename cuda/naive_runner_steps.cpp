// naive_runner's part in a later run of a recorded step (operand_effect): what its operators did
// with their operands, done again without their checks, and the effects recorded while they ran.
#include "cuda/naive_runner.hpp"

namespace ag {

void* naive_runner::effect(const op_desc& op, const operand_ref& ref, operand_effect::what kind,
                           std::size_t bytes, void* p, bool binds) const {
  if (effects_) {
    const int field = &ref == &op.out ? 0 : &ref == &op.a ? 1 : &ref == &op.b ? 2 : &ref == &op.c ? 3 : -1;
    if (field < 0) // not one of op's own fields: nothing a later run could find it by
      effects_complete_ = false;
    else
      effects_->push_back({kind, static_cast<uint8_t>(field), binds && bound_ != nullptr,
                           effect_op_, bytes});
  }
  if (!binds)
    return p;
  effect_bound_ = true;
  return bound(p);
}

const naive_runner::buffer* naive_runner::found(operand_id id) const noexcept {
  if (auto it = operands_.find(id); it != operands_.end())
    return &it->second;
  if (prebound_) // a step's operators run again over what a prepared run made: seldom
    for (const auto& [retired, buf] : retired_)
      if (retired == id)
        return &buf;
  return nullptr;
}

void* naive_runner::find(operand_id id, std::size_t bytes) const noexcept {
  if (auto it = operands_.find(id); it != operands_.end())
    return it->second.bytes == bytes ? it->second.ptr : nullptr;
  return nullptr;
}

void* naive_runner::create(operand_id id, std::size_t bytes) {
  void* p = stream_.allocate(bytes);
  operands_.emplace(id, buffer{p, bytes});
  live_bytes_ += bytes;
  if (peers_)
    peers_->publish(lane_, id, {p, bytes, stream_.device()});
  return p;
}

void naive_runner::retire(operand_id id) noexcept {
  if (const auto freed = free_operand(id))
    retired_.emplace_back(id, *freed);
}

} // namespace ag
