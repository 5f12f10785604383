// runner_answers_to: a batch runner's acknowledgements (actors/batch_runner.hpp) sent as messages
// to the actor it reports to: the executor or ag-replay (typed), a child's pusher (untyped).
#pragma once

#include <string>
#include <utility>


#include "actors/batch_runner.hpp"
#include "actors/protocol.hpp"

namespace ag {

template <class Self, class Handle>
class runner_answers_to final : public runner_answers {
public:
  runner_answers_to(Self* self, Handle to) : self_(self), to_(std::move(to)) {}
  void done(uint32_t lane, uint64_t ops_done, uint64_t entries, uint64_t live) override {
    self_->send(to_, done_atom::value, lane, ops_done, entries, live);
  }
  void failed(uint32_t lane, uint64_t index, std::string what) override {
    self_->send(to_, failed_atom::value, lane, index, std::move(what));
  }
  const Handle& to() const noexcept { return to_; }

private:
  Self* self_;
  Handle to_;
};

} // namespace ag
