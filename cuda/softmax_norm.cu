// The CUDA softmax, log_softmax, layer_norm and rms_norm (the rows family's normalisations), twins
// of cpu_rows.cpp within float rounding: one block per line, sums in float through CUB's block
// reduction (block_reduce.cuh), deterministic.
//
// A row of up to max_held elements is read once into registers, in 16-byte vectors when its
// pointers and length allow, else element by element; each exponential is computed once.
// Longer rows, and softmaxes over a dimension other than the last, are read again per pass.
#include <algorithm>

#include "cuda/block_reduce.cuh"
#include "cuda/cuda_error.hpp"
#include "cuda/device_values.cuh"
#include "cuda/row_kernels.cuh"

namespace ag::cuda {

namespace {

constexpr unsigned max_held = 4096; // the longest row held in registers

// A block's threads: each holds four 16-byte vectors of a row of max_held (16 values of 4 bytes
// with 256 threads, 32 of 2 bytes with 128), so that a block has as many bytes in flight
// whatever the dtype.
template <dtype T>
constexpr unsigned threads_of = sizeof(typename storage<T>::type) == 2 ? 128 : 256;
template <dtype T>
constexpr unsigned per_thread_of = max_held / threads_of<T>;
template <dtype T>
using combiner_of = block_combiner<float, threads_of<T>>;

// W elements of T, moved as one load or store (16 bytes, or one element where W == 1).
template <dtype T, unsigned W>
struct alignas(sizeof(typename storage<T>::type) * W) packet {
  typename storage<T>::type e[W];
};

// A row held by the block in registers: vector q (elements q * W ... q * W + W - 1) by thread
// q % threads, as its (q / threads)-th.
template <dtype T, unsigned W>
struct row_registers {
  static constexpr unsigned threads = threads_of<T>;
  static constexpr unsigned per_thread = per_thread_of<T>;
  static constexpr unsigned vectors = per_thread / W;
  float v[per_thread];

  __device__ static bool held(unsigned t, unsigned count) {
    return threadIdx.x + t * threads < count;
  }
  // count: the row's vectors; the elements past them read as pad.
  __device__ void load(const void* row, unsigned count, float pad) {
    const auto* p = static_cast<const packet<T, W>*>(row);
#pragma unroll
    for (unsigned t = 0; t < vectors; ++t) {
      if (held(t, count)) {
        const packet<T, W> x = p[threadIdx.x + t * threads];
#pragma unroll
        for (unsigned w = 0; w < W; ++w)
          v[t * W + w] = storage<T>::load(x.e[w]);
      } else {
#pragma unroll
        for (unsigned w = 0; w < W; ++w)
          v[t * W + w] = pad;
      }
    }
  }
};

template <dtype T, unsigned W>
__device__ void softmax_in_registers(const row_call& c, uint64_t row,
                                     combiner_of<T>& combine) {
  using P = packet<T, W>;
  const auto count = static_cast<unsigned>(c.k / W);
  row_registers<T, W> r;
  r.load(static_cast<const typename storage<T>::type*>(c.a) + row * c.k, count, -INFINITY);
  float top = -INFINITY;
#pragma unroll
  for (unsigned e = 0; e < r.per_thread; ++e)
    top = fmaxf(top, r.v[e]);
  top = combine(top, max_op{}); // a NaN spreads through the sum below
  const bool soft = c.kind == op_kind::softmax;
  float total = 0.0f; // past the row, exp(-inf - top) adds +0: no bit changes
#pragma unroll
  for (unsigned e = 0; e < r.per_thread; ++e) {
    const float x = expf(r.v[e] - top);
    if (soft)
      r.v[e] = x;
    total += x;
  }
  total = combine(total, sum_op{});
  const float inverse = 1.0f / total, shift = top + logf(total);
  auto* out = reinterpret_cast<P*>(static_cast<typename storage<T>::type*>(c.out) + row * c.k);
#pragma unroll
  for (unsigned t = 0; t < row_registers<T, W>::vectors; ++t) {
    if (!r.held(t, count))
      continue;
    P y;
#pragma unroll
    for (unsigned w = 0; w < W; ++w) {
      const float x = r.v[t * W + w];
      y.e[w] = storage<T>::store(soft ? x * inverse : x - shift);
    }
    out[threadIdx.x + t * r.threads] = y;
  }
}

template <dtype T, unsigned W>
__device__ void norm_in_registers(const row_call& c, uint64_t row,
                                  combiner_of<T>& combine) {
  using P = packet<T, W>;
  const auto count = static_cast<unsigned>(c.k / W);
  const bool layer = c.kind == op_kind::layer_norm;
  const float n = static_cast<float>(c.k);
  row_registers<T, W> r;
  r.load(static_cast<const typename storage<T>::type*>(c.a) + row * c.k, count, 0.0f);
  float sum = 0.0f;
#pragma unroll
  for (unsigned e = 0; e < r.per_thread; ++e)
    sum += layer ? r.v[e] : r.v[e] * r.v[e];
  sum = combine(sum, sum_op{}) / n;
  const float mean = layer ? sum : 0.0f;
  float var = sum; // rms_norm's mean square
  if (layer) {
    float square = 0.0f;
#pragma unroll
    for (unsigned t = 0; t < row_registers<T, W>::vectors; ++t)
      if (r.held(t, count))
#pragma unroll
        for (unsigned w = 0; w < W; ++w) {
          const float d = r.v[t * W + w] - mean;
          square += d * d;
        }
    var = combine(square, sum_op{}) / n;
  }
  const float scale = rsqrtf(var + static_cast<float>(c.scalar));
  const auto* weight = static_cast<const P*>(c.b);
  const auto* bias = static_cast<const P*>(c.c);
  auto* out = reinterpret_cast<P*>(static_cast<typename storage<T>::type*>(c.out) + row * c.k);
#pragma unroll
  for (unsigned t = 0; t < row_registers<T, W>::vectors; ++t) {
    if (!r.held(t, count))
      continue;
    const unsigned q = threadIdx.x + t * r.threads;
    P wq{}, bq{}, y;
    if (weight)
      wq = weight[q];
    if (bias)
      bq = bias[q];
#pragma unroll
    for (unsigned w = 0; w < W; ++w) {
      float x = (r.v[t * W + w] - mean) * scale;
      if (weight)
        x *= storage<T>::load(wq.e[w]);
      if (bias)
        x += storage<T>::load(bq.e[w]);
      y.e[w] = storage<T>::store(x);
    }
    out[q] = y;
  }
}

template <dtype T>
__device__ float value(const void* p, uint64_t i) {
  return load<T>(p, static_cast<int64_t>(i));
}

// Lines of [m, k, n] read per pass: a dimension other than the last, or rows too long to hold.
template <dtype T>
__device__ void softmax_in_passes(const row_call& c, uint64_t line,
                                  combiner_of<T>& combine) {
  const uint64_t base = line / c.n * c.k * c.n + line % c.n;
  float top = -INFINITY;
  for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x)
    top = fmaxf(top, value<T>(c.a, base + j * c.n));
  top = combine(top, max_op{});
  float total = 0.0f;
  for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x)
    total += expf(value<T>(c.a, base + j * c.n) - top);
  total = combine(total, sum_op{});
  const float inverse = 1.0f / total, shift = top + logf(total);
  const bool soft = c.kind == op_kind::softmax;
  for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
    const float x = value<T>(c.a, base + j * c.n);
    store<T>(c.out, static_cast<int64_t>(base + j * c.n),
             soft ? expf(x - top) * inverse : x - shift);
  }
}

template <dtype T>
__device__ void norm_in_passes(const row_call& c, uint64_t row, combiner_of<T>& combine) {
  const bool layer = c.kind == op_kind::layer_norm;
  const float n = static_cast<float>(c.k);
  const uint64_t base = row * c.k;
  float sum = 0.0f;
  for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
    const float x = value<T>(c.a, base + j);
    sum += layer ? x : x * x;
  }
  sum = combine(sum, sum_op{}) / n;
  const float mean = layer ? sum : 0.0f;
  float var = sum;
  if (layer) {
    float square = 0.0f;
    for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
      const float d = value<T>(c.a, base + j) - mean;
      square += d * d;
    }
    var = combine(square, sum_op{}) / n;
  }
  const float scale = rsqrtf(var + static_cast<float>(c.scalar));
  for (uint64_t j = threadIdx.x; j < c.k; j += blockDim.x) {
    float y = (value<T>(c.a, base + j) - mean) * scale;
    if (c.b)
      y *= value<T>(c.b, j);
    if (c.c)
      y += value<T>(c.c, j);
    store<T>(c.out, static_cast<int64_t>(base + j), y);
  }
}

// W > 0: rows held in registers, in vectors of W; W == 0: lines read per pass.
// Occupancy floors measured on the H200 (rows of 4096): blocks a multiprocessor holds at least,
// where the compiler's own register choice left a third of the copy bandwidth unused in bfloat16.
// 4-byte values: 8 blocks of a softmax, 6 of a norm (which holds its mean and scale besides);
// 2-byte values, twice the values a thread in half the threads: 8 and 7, all in registers.
template <dtype T>
constexpr unsigned softmax_blocks = 8;
template <dtype T>
constexpr unsigned norm_blocks = threads_of<T> == 128 ? 7 : 6;

template <dtype T, unsigned W>
__global__ void __launch_bounds__(threads_of<T>, softmax_blocks<T>) softmax_kernel(row_call c) {
  __shared__ typename combiner_of<T>::storage shared;
  combiner_of<T> combine{shared};
  for (uint64_t line = blockIdx.x; line < c.m * c.n; line += gridDim.x) {
    if constexpr (W > 0)
      softmax_in_registers<T, W>(c, line, combine);
    else
      softmax_in_passes<T>(c, line, combine);
  }
}

template <dtype T, unsigned W>
__global__ void __launch_bounds__(threads_of<T>, norm_blocks<T>) norm_kernel(row_call c) {
  __shared__ typename combiner_of<T>::storage shared;
  combiner_of<T> combine{shared};
  for (uint64_t row = blockIdx.x; row < c.m; row += gridDim.x) {
    if constexpr (W > 0)
      norm_in_registers<T, W>(c, row, combine);
    else
      norm_in_passes<T>(c, row, combine);
  }
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// The W the call's rows are read in: 16-byte vectors where every operand's rows start on 16
// bytes, single elements where they do not, 0 where a row does not fit in registers or a
// softmax runs along a dimension other than the last (a norm's n means nothing).
template <dtype T>
unsigned width_for(const row_call& c) {
  constexpr unsigned vector = 16 / sizeof(typename storage<T>::type);
  const bool along_last = c.n == 1 || c.kind == op_kind::layer_norm || c.kind == op_kind::rms_norm;
  if (!along_last || c.k > max_held)
    return 0;
  const bool whole = c.k % vector == 0 && aligned(c.a) && aligned(c.out)
                     && (!c.b || aligned(c.b)) && (!c.c || aligned(c.c));
  return whole ? vector : 1;
}

template <dtype T, template <dtype, unsigned> class Kernel>
void launch_rows(const row_call& c, uint64_t lines, cudaStream_t stream) {
  constexpr unsigned vector = 16 / sizeof(typename storage<T>::type);
  const auto grid = static_cast<unsigned>(std::min<uint64_t>(lines, 65535));
  switch (width_for<T>(c)) {
    case 0: Kernel<T, 0>::launch(c, grid, stream); break;
    case 1: Kernel<T, 1>::launch(c, grid, stream); break;
    default: Kernel<T, vector>::launch(c, grid, stream); break;
  }
  AG_CUDA_TRY(cudaGetLastError());
}

template <dtype T, unsigned W>
struct softmax_launch {
  static void launch(const row_call& c, unsigned grid, cudaStream_t stream) {
    softmax_kernel<T, W><<<grid, threads_of<T>, 0, stream>>>(c);
  }
};
template <dtype T, unsigned W>
struct norm_launch {
  static void launch(const row_call& c, unsigned grid, cudaStream_t stream) {
    norm_kernel<T, W><<<grid, threads_of<T>, 0, stream>>>(c);
  }
};

} // namespace

template <dtype T>
void launch_softmax(const row_call& c, cudaStream_t stream) {
  if (c.m * c.n > 0 && c.k > 0)
    launch_rows<T, softmax_launch>(c, c.m * c.n, stream);
}

template <dtype T>
void launch_norm(const row_call& c, cudaStream_t stream) {
  if (c.m > 0 && c.k > 0)
    launch_rows<T, norm_launch>(c, c.m, stream);
}

template void launch_softmax<dtype::float32>(const row_call&, cudaStream_t);
template void launch_softmax<dtype::float16>(const row_call&, cudaStream_t);
template void launch_softmax<dtype::bfloat16>(const row_call&, cudaStream_t);
template void launch_norm<dtype::float32>(const row_call&, cudaStream_t);
template void launch_norm<dtype::float16>(const row_call&, cudaStream_t);
template void launch_norm<dtype::bfloat16>(const row_call&, cudaStream_t);

} // namespace ag::cuda
