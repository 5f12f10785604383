#include "apps/ag-bench/train_step.hpp"

#include <cstdint>
#include <vector>

#include "apps/ag-train/mlp.hpp"

namespace ag::bench {

struct train_step::state {
  runtime& rt;
  device where;
  train::replica r;
  std::vector<float> xv = std::vector<float>(128 * 64, 0.25f);
  std::vector<float> hot = std::vector<float>(128 * 10, 0.0f);
  std::vector<int32_t> yv = std::vector<int32_t>(128);
};

train_step::train_step(runtime& rt, const device& where)
  : s_(new state{rt, where, train::make_replica(rt, where, 256, 1)}) {
  for (int i = 0; i < 128; ++i) {
    s_->yv[static_cast<std::size_t>(i)] = i % 10;
    s_->hot[static_cast<std::size_t>(i * 10 + i % 10)] = 1.0f;
  }
}

train_step::~train_step() = default;

tensor train_step::operator()() {
  auto& s = *s_;
  const auto x = s.rt.from_vector({128, 64}, s.xv, s.where);
  const auto y = s.rt.from_vector({128}, s.yv, s.where);
  const auto onehot = s.rt.from_vector({128, 10}, s.hot, s.where);
  const auto g = train::forward_backward(s.r, x, y, onehot, dtype::float32, 128);
  train::update(s.r, g.w1, g.b1, g.w2, g.b2, 0.1, 0.9);
  return g.loss;
}

} // namespace ag::bench
