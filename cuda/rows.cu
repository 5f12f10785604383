// The CUDA kernels of the reductions, index, random and concat operators, twins of cpu_rows.cpp,
// and the rows family's dispatch (the normalisations are softmax_norm.cu's): a reduction takes one
// block per line of [m, k, n], threads striding along it, sums in float combined by CUB's block
// reduction (block_reduce.cuh), a fixed tree, so every run gives the same bits.
#include <algorithm>
#include <cmath>
#include <string>

#include "actorgraph/error.hpp"
#include "cuda/cuda_error.hpp"
#include "cuda/block_reduce.cuh"
#include "cuda/cuda_kernels.cuh"
#include "cuda/device_values.cuh"
#include "cuda/row_kernels.cuh"
#include "graph/philox.hpp"

namespace ag::cuda {

namespace {

constexpr unsigned threads = row_threads;
// Lines beyond this many blocks are taken by the blocks in turn.
constexpr uint64_t max_blocks = 65535;

unsigned blocks_for(uint64_t lines) {
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min(lines, max_blocks)));
}

// Every value of T the row's operands may hold, as float.
template <dtype T>
__device__ float value(const void* p, uint64_t i) {
  return load<T>(p, static_cast<int64_t>(i));
}

template <dtype T>
__global__ void __launch_bounds__(row_threads) reduce_kernel(row_call c) {
  __shared__ typename block_combiner<float>::storage shared;
  __shared__ typename block_combiner<arg_value>::storage shared_args;
  block_combiner<float> combine{shared};
  block_combiner<arg_value> combine_args{shared_args};
  const bool max = c.kind == op_kind::reduce_max;
  for (uint64_t line = blockIdx.x; line < c.m * c.n; line += gridDim.x) {
    const uint64_t base = line / c.n * c.k * c.n + line % c.n;
    if (c.kind == op_kind::argmax) {
      arg_value best{-INFINITY, INT64_MAX};
      for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x)
        best = argmax_op{}(best, {value<T>(c.a, base + j * c.n), static_cast<int64_t>(j)});
      const arg_value r = combine_args(best, argmax_op{});
      if (threadIdx.x == 0)
        static_cast<int64_t*>(c.out)[line] = c.k == 0 ? 0 : r.index;
      continue;
    }
    float acc = max ? -INFINITY : 0.0f;
    for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
      const float x = value<T>(c.a, base + j * c.n);
      acc = max ? nan_max_op{}(acc, x) : acc + x;
    }
    float r = max ? combine(acc, nan_max_op{}) : combine(acc, sum_op{});
    if (c.kind == op_kind::reduce_mean)
      r = c.k == 0 ? NAN : r / static_cast<float>(c.k);
    if (threadIdx.x == 0)
      store<T>(c.out, static_cast<int64_t>(line), r);
  }
}

__device__ int64_t index_at(const row_call& c, uint64_t i) {
  return c.in_type == dtype::int32 ? static_cast<const int32_t*>(c.b)[i]
                                   : static_cast<const int64_t*>(c.b)[i];
}

// The first index out of range a pick kernel meets since the stream last synchronized
// (row_call::fault): it writes a NaN there too.
__device__ void report_out_of_range(const row_call& c, uint64_t at, int64_t index, uint64_t size) {
  if (c.fault == nullptr
      || atomicCAS(reinterpret_cast<unsigned long long*>(c.fault), 0ull, 1ull) != 0ull)
    return;
  c.fault[1] = static_cast<int64_t>(at);
  c.fault[2] = index;
  c.fault[3] = static_cast<int64_t>(size);
  c.fault[4] = static_cast<int64_t>(c.kind);
  __threadfence_system();
}

template <dtype T>
__global__ void pick_kernel(row_call c) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t e = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < c.count;
       e += stride) {
    if (c.kind == op_kind::embedding) {
      const int64_t row = index_at(c, e / c.k);
      const bool in = row >= 0 && static_cast<uint64_t>(row) < c.m;
      if (!in)
        report_out_of_range(c, e / c.k, row, c.m);
      store<T>(c.out, static_cast<int64_t>(e),
               in ? value<T>(c.a, static_cast<uint64_t>(row) * c.k + e % c.k) : NAN);
    } else {
      const int64_t col = index_at(c, e);
      const bool in = col >= 0 && static_cast<uint64_t>(col) < c.k;
      if (!in)
        report_out_of_range(c, e, col, c.k);
      store<T>(c.out, static_cast<int64_t>(e),
               in ? value<T>(c.a, e * c.k + static_cast<uint64_t>(col)) : NAN);
    }
  }
}

template <dtype T>
__global__ void random_kernel(row_call c) {
  const auto kind = c.k == 0 ? random_kind::uniform : random_kind::normal;
  const auto lo = static_cast<float>(c.scalar), hi = static_cast<float>(c.scalar2);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t e = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < c.count;
       e += stride)
    store<T>(c.out, static_cast<int64_t>(e), philox::draw(kind, c.m, c.n + e, lo, hi));
}

// concat: element e of out is element e of its row in a, b or c, moved as its bits (U: an
// unsigned integer of the dtype's size).
template <class U>
__global__ void concat_kernel(row_call c) {
  const uint64_t width = c.count / c.m, r = width - c.k - c.n;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t e = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < c.count;
       e += stride) {
    const uint64_t row = e / width, col = e % width;
    U x;
    if (col < c.k)
      x = static_cast<const U*>(c.a)[row * c.k + col];
    else if (col < c.k + c.n)
      x = static_cast<const U*>(c.b)[row * c.n + col - c.k];
    else
      x = static_cast<const U*>(c.c)[row * r + col - c.k - c.n];
    static_cast<U*>(c.out)[e] = x;
  }
}

void launch_concat(const row_call& c, cudaStream_t stream) {
  if (c.count == 0 || c.m == 0)
    return;
  const auto grid =
    static_cast<unsigned>(std::min<uint64_t>((c.count + threads - 1) / threads, 4096));
  switch (size_of(c.type)) {
    case 1: concat_kernel<uint8_t><<<grid, threads, 0, stream>>>(c); break;
    case 2: concat_kernel<uint16_t><<<grid, threads, 0, stream>>>(c); break;
    case 4: concat_kernel<uint32_t><<<grid, threads, 0, stream>>>(c); break;
    default: concat_kernel<unsigned long long><<<grid, threads, 0, stream>>>(c); break;
  }
  AG_CUDA_TRY(cudaGetLastError());
}

template <dtype T>
void launch(const row_call& c, cudaStream_t stream) {
  switch (c.kind) {
    case op_kind::reduce_sum:
    case op_kind::reduce_mean:
    case op_kind::reduce_max:
    case op_kind::argmax:
      if (c.m * c.n > 0)
        reduce_kernel<T><<<blocks_for(c.m * c.n), threads, 0, stream>>>(c);
      break;
    case op_kind::softmax:
    case op_kind::log_softmax: return launch_softmax<T>(c, stream);
    case op_kind::layer_norm:
    case op_kind::rms_norm: return launch_norm<T>(c, stream);
    case op_kind::embedding:
    case op_kind::gather:
    case op_kind::random:
      if (c.count > 0) {
        const auto grid = static_cast<unsigned>(
          std::min<uint64_t>((c.count + threads - 1) / threads, 4096));
        if (c.kind == op_kind::random)
          random_kernel<T><<<grid, threads, 0, stream>>>(c);
        else
          pick_kernel<T><<<grid, threads, 0, stream>>>(c);
      }
      break;
    default: throw error("cuda rows: " + to_string(c.kind) + " is not one of its operators");
  }
  AG_CUDA_TRY(cudaGetLastError());
}

} // namespace

void rows(const row_call& c, cudaStream_t stream) {
  if (c.kind == op_kind::concat)
    return launch_concat(c, stream);
  const dtype values = c.kind == op_kind::embedding || c.kind == op_kind::gather
                           || c.kind == op_kind::random
                         ? c.type
                         : c.in_type;
  switch (values) {
    case dtype::float32: return launch<dtype::float32>(c, stream);
    case dtype::float16: return launch<dtype::float16>(c, stream);
    case dtype::bfloat16: return launch<dtype::bfloat16>(c, stream);
    default:
      throw error("cuda rows: " + to_string(c.kind) + " does not take " + to_string(values));
  }
}

} // namespace ag::cuda
