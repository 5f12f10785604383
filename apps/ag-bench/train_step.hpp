// train_step: ag-train's step (64 -> 256 -> 10, batch 128, SGD with momentum) on one device, as
// ag-bench times it (--mode=ops, --mode=steps): a batch uploaded, forward, backward, update.
#pragma once

#include <memory>

#include <actorgraph/actorgraph.hpp>

namespace ag::bench {

class train_step {
public:
  train_step(runtime& rt, const device& where);
  ~train_step();
  train_step(const train_step&) = delete;
  train_step& operator=(const train_step&) = delete;

  // Submits one step; returns its loss (a tensor on the device).
  tensor operator()();

private:
  struct state;
  std::unique_ptr<state> s_;
};

} // namespace ag::bench
