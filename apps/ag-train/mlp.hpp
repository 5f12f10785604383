// The model of ag-train: a 64 -> hidden -> 10 MLP (ReLU, softmax cross-entropy) as one device's
// replica, its forward and backward pass over a shard of a batch, and its SGD-with-momentum
// update. ag-bench times the same step (--mode=ops).
#pragma once

#include <cstdint>

#include <actorgraph/actorgraph.hpp>

namespace ag::train {

// One device's copy of the model: float32 parameters and their momentum.
struct replica {
  ag::device where;
  tensor w1, b1, w2, b2;
  tensor v_w1, v_b1, v_w2, v_b2;
};

// The initial replica on `where`: He-normal weights drawn from `seed` (the same bits on every
// device), zero biases and momentum.
replica make_replica(runtime& rt, const ag::device& where, int64_t hidden, uint64_t seed);

// The gradients of one shard, float32, for the mean loss over the whole batch of `batch` images
// (each shard's gradients summed over the devices give the batch's), and the shard's mean loss.
struct shard_grads {
  tensor w1, b1, w2, b2, loss;
};

// x [rows, 64] and onehot [rows, 10] of dtype dt, y [rows] int32.
shard_grads forward_backward(const replica& r, const tensor& x, const tensor& y,
                             const tensor& onehot, dtype dt, double batch);

// v = momentum v + g; p = p - lr v, for every parameter, from summed gradients.
void update(replica& r, const tensor& w1, const tensor& b1, const tensor& w2, const tensor& b2,
            double lr, double momentum);

// The logits of x [n, 64] (dtype dt).
tensor logits(const replica& r, const tensor& x, dtype dt);

} // namespace ag::train
