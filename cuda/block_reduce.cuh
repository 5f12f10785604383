// Block-wide combinations for the row kernels (rows.cu, softmax_norm.cu), through CUB's
// BlockReduce: a fixed tree for a fixed block size, so every run gives the same bits, and every
// thread of the block gets the result. For the .cu files only.
#pragma once

#include <cub/block/block_reduce.cuh>

#include <cstdint>

namespace ag::cuda {

// The row kernels' blocks: this many threads (the normalisations of 2-byte values half of it).
constexpr unsigned row_threads = 256;

struct sum_op {
  __device__ float operator()(float x, float y) const { return x + y; }
};
// The larger, NaN first (torch.max's rule).
struct nan_max_op {
  __device__ float operator()(float x, float y) const {
    return isnan(x) ? x : isnan(y) ? y : fmaxf(x, y);
  }
};
// The larger, NaN last: where a NaN spreads anyway (a softmax's sum), the cheaper one.
struct max_op {
  __device__ float operator()(float x, float y) const { return fmaxf(x, y); }
};

// argmax's candidates: the first NaN, else the first of the largest.
struct arg_value {
  float value;
  int64_t index;
};
struct argmax_op {
  __device__ arg_value operator()(const arg_value& x, const arg_value& y) const {
    if (isnan(x.value) != isnan(y.value))
      return isnan(x.value) ? x : y;
    if (isnan(x.value))
      return x.index < y.index ? x : y;
    return x.value > y.value || (x.value == y.value && x.index < y.index) ? x : y;
  }
};

// A block's combinations of one value per thread, one after another. Consecutive calls use
// alternate halves of the shared storage: the writers of one call and the readers of the call
// before it are always separated by a barrier of the call in between, so one barrier per call
// (CUB's) and one for the result are all it takes.
template <class T, unsigned Threads = row_threads>
class block_combiner {
  using reduce = cub::BlockReduce<T, Threads>;

public:
  struct storage {
    typename reduce::TempStorage temp[2];
    T result[2];
  };

  __device__ explicit block_combiner(storage& s) : s_(s) {}

  template <class Op>
  __device__ T operator()(T v, Op op) {
    const T r = reduce(s_.temp[slot_]).Reduce(v, op); // valid in thread 0
    if (threadIdx.x == 0)
      s_.result[slot_] = r;
    __syncthreads();
    const T all = s_.result[slot_];
    slot_ ^= 1;
    return all;
  }

private:
  storage& s_;
  unsigned slot_ = 0;
};

} // namespace ag::cuda
