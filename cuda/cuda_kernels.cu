#include "cuda/cuda_kernels.cuh"

#include <algorithm>
#include <cstdint>
#include <string>

#include "actorgraph/error.hpp"
#include "cuda/cuda_error.hpp"

namespace ag::cuda {

namespace {

constexpr unsigned block_threads = 256;
constexpr unsigned warp_threads = 32;

// Elementwise grids stop at 4096 blocks: more than four waves of resident blocks on an H200
// (132 SMs x 8 blocks of 256 threads), which saturates memory bandwidth; the grid-stride loops
// cover whatever is left, so no count overflows the grid.
constexpr std::size_t elementwise_max_blocks = 4096;

// The sum's first pass uses a fixed number of blocks, independent of the GPU, so that the scratch
// has a fixed size and the order of additions (hence the rounding of the result) is the same on
// every GPU. 1024 blocks are about one full wave on an H200, enough to reach memory bandwidth.
constexpr std::size_t sum_max_blocks = 1024;

unsigned grid_for(std::size_t count, std::size_t max_blocks) {
  return static_cast<unsigned>(std::min((count + block_threads - 1) / block_threads, max_blocks));
}

// Indices are std::size_t all the way: counts reach past 2^31 elements.
__device__ std::size_t first_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ std::size_t grid_stride() {
  return static_cast<std::size_t>(gridDim.x) * blockDim.x;
}

// The block's total in thread 0, in a fixed order (shuffles within warps, then across warps), so
// the result is deterministic.
__device__ double block_sum(double v) {
  __shared__ double warp_sums[block_threads / warp_threads];
  const unsigned lane = threadIdx.x % warp_threads;
  const unsigned warp = threadIdx.x / warp_threads;
  for (unsigned offset = warp_threads / 2; offset > 0; offset /= 2)
    v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0)
    warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < block_threads / warp_threads ? warp_sums[lane] : 0.0;
    for (unsigned offset = warp_threads / 2; offset > 0; offset /= 2)
      v += __shfl_down_sync(0xffffffffu, v, offset);
  }
  return v;
}

// Pass 1: each block's share in double, one partial per block. The CPU reference accumulates in
// double too; float accumulation over a million elements would miss its 1e-5 tolerance.
__global__ void sum_partials_kernel(const float* a, std::size_t count, double* partials) {
  double acc = 0.0;
  for (std::size_t i = first_index(); i < count; i += grid_stride())
    acc += a[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = acc;
}

// Pass 2: one block adds the partials and rounds to float once, at the end.
__global__ void sum_final_kernel(const double* partials, unsigned blocks, float* out) {
  double acc = 0.0;
  for (unsigned i = threadIdx.x; i < blocks; i += blockDim.x)
    acc += partials[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0)
    *out = static_cast<float>(acc);
}

} // namespace

__global__ void random_kernel(random_kind kind, float* out, std::size_t count, uint64_t seed,
                              uint64_t first, float a, float b) {
  for (std::size_t i = first_index(); i < count; i += grid_stride())
    out[i] = philox::draw(kind, seed, first + i, a, b);
}

void random(random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first, float a,
            float b, cudaStream_t stream) {
  if (count == 0)
    return;
  random_kernel<<<grid_for(count, elementwise_max_blocks), block_threads, 0, stream>>>(
    kind, out, count, seed, first, a, b);
  AG_CUDA_TRY(cudaGetLastError());
}

// The parts of a sum_parts, by value (kernel parameters): no device array to allocate per launch.
struct part_list {
  const float* p[16];
  unsigned n;
};

// Four elements per thread and iteration where every part and out are 16-byte aligned (the
// caching allocator's blocks are): a peer's memory is read in 16-byte transactions. No
// contraction: ((p0 + p1) + p2) + ..., as the cpu adds them.
__global__ void sum_parts_kernel(float* out, part_list parts, std::size_t count, bool vector) {
  const std::size_t quads = vector ? count / 4 : 0;
  for (std::size_t i = first_index(); i < quads; i += grid_stride()) {
    float4 acc = reinterpret_cast<const float4*>(parts.p[0])[i];
    for (unsigned r = 1; r < parts.n; ++r) {
      const float4 x = reinterpret_cast<const float4*>(parts.p[r])[i];
      acc.x = __fadd_rn(acc.x, x.x);
      acc.y = __fadd_rn(acc.y, x.y);
      acc.z = __fadd_rn(acc.z, x.z);
      acc.w = __fadd_rn(acc.w, x.w);
    }
    reinterpret_cast<float4*>(out)[i] = acc;
  }
  for (std::size_t i = quads * 4 + first_index(); i < count; i += grid_stride()) {
    float acc = parts.p[0][i];
    for (unsigned r = 1; r < parts.n; ++r)
      acc = __fadd_rn(acc, parts.p[r][i]);
    out[i] = acc;
  }
}

std::size_t sum_scratch_bytes() noexcept { return sum_max_blocks * sizeof(double); }

void sum(const float* a, float* out, std::size_t count, double* scratch, cudaStream_t stream) {
  if (count == 0) {
    // +0.0f is all zero bits.
    AG_CUDA_TRY(cudaMemsetAsync(out, 0, sizeof(float), stream));
    return;
  }
  const unsigned blocks = grid_for(count, sum_max_blocks);
  sum_partials_kernel<<<blocks, block_threads, 0, stream>>>(a, count, scratch);
  AG_CUDA_TRY(cudaGetLastError());
  sum_final_kernel<<<1, block_threads, 0, stream>>>(scratch, blocks, out);
  AG_CUDA_TRY(cudaGetLastError());
}

void sum_parts(float* out, const float* const* parts, std::size_t n_parts, std::size_t count,
               cudaStream_t stream) {
  if (n_parts == 0 || n_parts > 16)
    throw error("sum of " + std::to_string(n_parts) + " parts: 1 to 16 are possible");
  if (count == 0)
    return;
  part_list list{};
  bool vector = reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
  for (std::size_t r = 0; r < n_parts; ++r) {
    list.p[r] = parts[r];
    vector = vector && reinterpret_cast<std::uintptr_t>(parts[r]) % 16 == 0;
  }
  list.n = static_cast<unsigned>(n_parts);
  const std::size_t work = vector ? std::max<std::size_t>(count / 4, 1) : count;
  sum_parts_kernel<<<grid_for(work, elementwise_max_blocks), block_threads, 0, stream>>>(
    out, list, count, vector);
  AG_CUDA_TRY(cudaGetLastError());
}

} // namespace ag::cuda
