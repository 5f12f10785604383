#include "apps/ag-train/mlp.hpp"

#include <cmath>

namespace ag::train {

replica make_replica(runtime& rt, const ag::device& d, int64_t hidden, uint64_t seed) {
  replica r;
  r.where = d;
  r.w1 = rt.normal({64, hidden}, 0.0, std::sqrt(2.0 / 64), seed * 4 + 1, d);
  r.w2 = rt.normal({hidden, 10}, 0.0, std::sqrt(2.0 / double(hidden)), seed * 4 + 2, d);
  r.b1 = rt.full({hidden}, 0.0, d);
  r.b2 = rt.full({10}, 0.0, d);
  r.v_w1 = rt.full({64, hidden}, 0.0, d);
  r.v_w2 = rt.full({hidden, 10}, 0.0, d);
  r.v_b1 = rt.full({hidden}, 0.0, d);
  r.v_b2 = rt.full({10}, 0.0, d);
  return r;
}

shard_grads forward_backward(const replica& r, const tensor& x, const tensor& y,
                             const tensor& onehot, dtype dt, double batch) {
  const auto w1 = r.w1.astype(dt), b1 = r.b1.astype(dt);
  const auto w2 = r.w2.astype(dt), b2 = r.b2.astype(dt);
  const auto z1 = ag::matmul(x, w1) + b1;
  const auto h = ag::relu(z1);
  const auto out = ag::matmul(h, w2) + b2;
  shard_grads g;
  g.loss = ag::cross_entropy(out, y).astype(dtype::float32);
  const auto dlogits = (ag::softmax(out, 1) - onehot) * (1.0 / batch);
  g.w2 = ag::matmul(h.transpose(0, 1), dlogits).astype(dtype::float32);
  g.b2 = dlogits.sum({0}).astype(dtype::float32);
  const auto dh = ag::matmul(dlogits, w2.transpose(0, 1));
  const auto dz1 = dh * ag::gt(z1, 0.0).astype(dt);
  g.w1 = ag::matmul(x.transpose(0, 1), dz1).astype(dtype::float32);
  g.b1 = dz1.sum({0}).astype(dtype::float32);
  return g;
}

namespace {

void step(tensor& p, tensor& v, const tensor& g, double lr, double momentum) {
  v = momentum == 0.0 ? g : v * momentum + g;
  p = p - v * lr;
}

} // namespace

void update(replica& r, const tensor& w1, const tensor& b1, const tensor& w2, const tensor& b2,
            double lr, double momentum) {
  step(r.w1, r.v_w1, w1, lr, momentum);
  step(r.b1, r.v_b1, b1, lr, momentum);
  step(r.w2, r.v_w2, w2, lr, momentum);
  step(r.b2, r.v_b2, b2, lr, momentum);
}

tensor logits(const replica& r, const tensor& x, dtype dt) {
  return ag::matmul(ag::relu(ag::matmul(x, r.w1.astype(dt)) + r.b1.astype(dt)), r.w2.astype(dt))
         + r.b2.astype(dt);
}

} // namespace ag::train
