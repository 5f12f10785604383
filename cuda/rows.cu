// The CUDA kernels of the reductions, softmaxes, norms, index and random operators, twins of
// cpu_rows.cpp: one block per line of [m, k, n] (or per row), threads striding along it, sums in
// float combined in a fixed order (shuffles within warps, then across them), so every run gives
// the same bits.
#include <algorithm>
#include <cmath>
#include <string>

#include "actorgraph/error.hpp"
#include "cuda/cuda_error.hpp"
#include "cuda/cuda_kernels.cuh"
#include "cuda/device_values.cuh"
#include "graph/philox.hpp"

namespace ag::cuda {

namespace {

constexpr unsigned threads = 256;
constexpr unsigned warps = threads / 32;
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

// The block's combination of v (sum, or max with NaN first) in thread 0... and in every thread.
template <bool Max>
__device__ float block_combine(float v) {
  __shared__ float partial[warps];
  __shared__ float result;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  auto combine = [](float x, float y) {
    if (!Max)
      return x + y;
    return isnan(x) ? x : isnan(y) ? y : fmaxf(x, y);
  };
  for (unsigned d = 16; d > 0; d /= 2)
    v = combine(v, __shfl_down_sync(0xffffffffu, v, d));
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? partial[lane] : (Max ? -INFINITY : 0.0f);
    for (unsigned d = 16; d > 0; d /= 2)
      v = combine(v, __shfl_down_sync(0xffffffffu, v, d));
    if (lane == 0)
      result = v;
  }
  __syncthreads();
  const float r = result;
  __syncthreads(); // result may be written again by the next combine
  return r;
}

// argmax: the first NaN, else the first of the largest; (value, index) pairs.
__device__ bool better(float x, int64_t i, float y, int64_t j) {
  if (isnan(x) != isnan(y))
    return isnan(x);
  if (isnan(x))
    return i < j;
  return x > y || (x == y && i < j);
}

__device__ int64_t block_argmax(float v, int64_t at) {
  __shared__ float values[warps];
  __shared__ int64_t indices[warps];
  __shared__ int64_t result;
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (unsigned d = 16; d > 0; d /= 2) {
    const float ov = __shfl_down_sync(0xffffffffu, v, d);
    const int64_t oi = __shfl_down_sync(0xffffffffu, at, d);
    if (better(ov, oi, v, at)) {
      v = ov;
      at = oi;
    }
  }
  if (lane == 0) {
    values[warp] = v;
    indices[warp] = at;
  }
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? values[lane] : -INFINITY;
    at = lane < warps ? indices[lane] : INT64_MAX;
    for (unsigned d = 16; d > 0; d /= 2) {
      const float ov = __shfl_down_sync(0xffffffffu, v, d);
      const int64_t oi = __shfl_down_sync(0xffffffffu, at, d);
      if (better(ov, oi, v, at)) {
        v = ov;
        at = oi;
      }
    }
    if (lane == 0)
      result = at;
  }
  __syncthreads();
  const int64_t r = result;
  __syncthreads();
  return r;
}

template <dtype T>
__global__ void reduce_kernel(row_call c) {
  for (uint64_t line = blockIdx.x; line < c.m * c.n; line += gridDim.x) {
    const uint64_t o = line / c.n, i = line % c.n;
    const uint64_t base = o * c.k * c.n + i;
    if (c.kind == op_kind::argmax) {
      float best = -INFINITY;
      int64_t at = INT64_MAX;
      for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
        const float x = value<T>(c.a, base + j * c.n);
        if (better(x, static_cast<int64_t>(j), best, at)) {
          best = x;
          at = static_cast<int64_t>(j);
        }
      }
      const int64_t r = block_argmax(best, at);
      if (threadIdx.x == 0)
        static_cast<int64_t*>(c.out)[line] = c.k == 0 ? 0 : r;
      continue;
    }
    const bool max = c.kind == op_kind::reduce_max;
    float acc = max ? -INFINITY : 0.0f;
    for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
      const float x = value<T>(c.a, base + j * c.n);
      acc = max ? (isnan(acc) ? acc : isnan(x) ? x : fmaxf(acc, x)) : acc + x;
    }
    float r = max ? block_combine<true>(acc) : block_combine<false>(acc);
    if (c.kind == op_kind::reduce_mean)
      r = c.k == 0 ? NAN : r / static_cast<float>(c.k);
    if (threadIdx.x == 0)
      store<T>(c.out, static_cast<int64_t>(line), r);
  }
}

// Rows of up to threads * cached elements are read once, into registers: element j of a row is
// held by thread j % threads, in the same order as the loops below go, so the bits are theirs.
constexpr unsigned cached = 16;

template <dtype T>
__device__ void softmax_in_registers(const row_call& c, uint64_t base) {
  using S = typename storage<T>::type;
  const S* in = static_cast<const S*>(c.a) + base; // the row, indexed in 32 bits
  S* out = static_cast<S*>(c.out) + base;
  const auto k = static_cast<unsigned>(c.k);
  float v[cached];
  float top = -INFINITY;
#pragma unroll
  for (unsigned t = 0; t < cached; ++t) {
    const unsigned j = threadIdx.x + t * threads;
    v[t] = j < k ? storage<T>::load(in[j]) : -INFINITY;
    top = fmaxf(top, v[t]);
  }
  top = block_combine<true>(top);
  float total = 0.0f;
#pragma unroll
  for (unsigned t = 0; t < cached; ++t)
    if (threadIdx.x + t * threads < k)
      total += expf(v[t] - top);
  total = block_combine<false>(total);
  const float log_total = logf(total);
  const bool soft = c.kind == op_kind::softmax;
#pragma unroll
  for (unsigned t = 0; t < cached; ++t) {
    const unsigned j = threadIdx.x + t * threads;
    if (j < k) {
      const float shifted = v[t] - top;
      out[j] = storage<T>::store(soft ? expf(shifted) / total : shifted - log_total);
    }
  }
}

template <dtype T>
__global__ void softmax_kernel(row_call c) {
  const bool in_registers = c.n == 1 && c.k <= uint64_t{threads} * cached;
  for (uint64_t line = blockIdx.x; line < c.m * c.n; line += gridDim.x) {
    const uint64_t o = line / c.n, i = line % c.n;
    const uint64_t base = o * c.k * c.n + i;
    if (in_registers) {
      softmax_in_registers<T>(c, base);
      continue;
    }
    float top = -INFINITY;
    for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x)
      top = fmaxf(top, value<T>(c.a, base + j * c.n));
    top = block_combine<true>(top);
    float total = 0.0f;
    for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x)
      total += expf(value<T>(c.a, base + j * c.n) - top);
    total = block_combine<false>(total);
    const float log_total = logf(total);
    for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
      const float shifted = value<T>(c.a, base + j * c.n) - top;
      store<T>(c.out, static_cast<int64_t>(base + j * c.n),
               c.kind == op_kind::softmax ? expf(shifted) / total : shifted - log_total);
    }
  }
}

template <dtype T>
__device__ void norm_in_registers(const row_call& c, uint64_t base) {
  using S = typename storage<T>::type;
  const S* in = static_cast<const S*>(c.a) + base; // the row, indexed in 32 bits
  S* out = static_cast<S*>(c.out) + base;
  const auto* weight = static_cast<const S*>(c.b);
  const auto* bias = static_cast<const S*>(c.c);
  const auto k = static_cast<unsigned>(c.k);
  const bool layer = c.kind == op_kind::layer_norm;
  const float n = static_cast<float>(c.k);
  float v[cached];
  float sum = 0.0f, square = 0.0f;
#pragma unroll
  for (unsigned t = 0; t < cached; ++t) {
    const unsigned j = threadIdx.x + t * threads;
    v[t] = j < k ? storage<T>::load(in[j]) : 0.0f;
    sum += v[t];
    square += v[t] * v[t];
  }
  const float mean = block_combine<false>(sum) / n;
  float var = 0.0f;
  if (layer) {
#pragma unroll
    for (unsigned t = 0; t < cached; ++t)
      if (threadIdx.x + t * threads < k)
        var += (v[t] - mean) * (v[t] - mean);
    var = block_combine<false>(var) / n;
  } else {
    var = block_combine<false>(square) / n;
  }
  const float scale = rsqrtf(var + static_cast<float>(c.scalar));
#pragma unroll
  for (unsigned t = 0; t < cached; ++t) {
    const unsigned j = threadIdx.x + t * threads;
    if (j < k) {
      float y = (v[t] - (layer ? mean : 0.0f)) * scale;
      if (weight)
        y *= storage<T>::load(weight[j]);
      if (bias)
        y += storage<T>::load(bias[j]);
      out[j] = storage<T>::store(y);
    }
  }
}

template <dtype T>
__global__ void norm_kernel(row_call c) {
  const bool layer = c.kind == op_kind::layer_norm;
  const float n = static_cast<float>(c.k);
  const bool in_registers = c.k <= uint64_t{threads} * cached;
  for (uint64_t row = blockIdx.x; row < c.m; row += gridDim.x) {
    const uint64_t base = row * c.k;
    if (in_registers) {
      norm_in_registers<T>(c, base);
      continue;
    }
    float sum = 0.0f, square = 0.0f;
    for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
      const float x = value<T>(c.a, base + j);
      sum += x;
      square += x * x;
    }
    const float mean = block_combine<false>(sum) / n;
    float var = 0.0f;
    if (layer) {
      for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
        const float d = value<T>(c.a, base + j) - mean;
        var += d * d;
      }
      var = block_combine<false>(var) / n;
    } else {
      var = block_combine<false>(square) / n;
    }
    const float scale = rsqrtf(var + static_cast<float>(c.scalar));
    for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
      float y = (value<T>(c.a, base + j) - (layer ? mean : 0.0f)) * scale;
      if (c.b)
        y *= value<T>(c.b, j);
      if (c.c)
        y += value<T>(c.c, j);
      store<T>(c.out, static_cast<int64_t>(base + j), y);
    }
  }
}

__device__ int64_t index_at(const row_call& c, uint64_t i) {
  return c.in_type == dtype::int32 ? static_cast<const int32_t*>(c.b)[i]
                                   : static_cast<const int64_t*>(c.b)[i];
}

template <dtype T>
__global__ void pick_kernel(row_call c) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t e = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < c.count;
       e += stride) {
    if (c.kind == op_kind::embedding) {
      const int64_t row = index_at(c, e / c.k);
      const bool in = row >= 0 && static_cast<uint64_t>(row) < c.m;
      store<T>(c.out, static_cast<int64_t>(e),
               in ? value<T>(c.a, static_cast<uint64_t>(row) * c.k + e % c.k) : NAN);
    } else {
      const int64_t col = index_at(c, e);
      const bool in = col >= 0 && static_cast<uint64_t>(col) < c.k;
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
    case op_kind::log_softmax:
      if (c.m * c.n > 0 && c.k > 0)
        softmax_kernel<T><<<blocks_for(c.m * c.n), threads, 0, stream>>>(c);
      break;
    case op_kind::layer_norm:
    case op_kind::rms_norm:
      if (c.m > 0 && c.k > 0)
        norm_kernel<T><<<blocks_for(c.m), threads, 0, stream>>>(c);
      break;
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
