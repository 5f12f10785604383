// The CUDA kernels of a cuda:N stream, as host-side launchers that enqueue on a given stream: the
// GPU twin of cpu_kernels.hpp, tested against it. Plain C++ (no <<< >>>, no __global__), so that
// cuda_stream.cpp, compiled by the host compiler, can include it.
//
// Each launcher returns once the work is enqueued; launch failures throw ag::cuda_error, failures
// while running surface at the stream's next synchronize.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "cuda/elementwise_call.hpp"
#include "cuda/row_call.hpp"
#include "graph/op.hpp"
#include "graph/philox.hpp"

namespace ag::cuda {

// count elements of t, each the low size_of(t) bytes of `bits` (fill_bits()).
void fill(dtype t, void* out, std::size_t count, uint64_t bits, cudaStream_t stream);
// Every elementwise operator (elementwise.cu), the twin of cpu::elementwise: the same bits but
// for the math library's functions (elementwise_math.hpp). A kind or dtype it does not take
// throws ag::error.
void elementwise(const elementwise_call& call, cudaStream_t stream);
// The reductions, softmaxes, norms, index and random operators (rows.cu), twins of cpu::rows
// (sums in float, in a fixed order: deterministic). An index out of range gives NaN.
void rows(const row_call& call, cudaStream_t stream);
// The twin of cpu::random, bit for bit (graph/philox.hpp spells out every rounding).
void random(random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first, float a,
            float b, cudaStream_t stream);

// The sum reduces in two passes, in double, through a scratch array of partial sums that the
// caller owns (so that a sum costs no allocation): at least sum_scratch_bytes, device memory.
std::size_t sum_scratch_bytes() noexcept;
// *out = the sum of a's count elements; count == 0 writes 0.
void sum(const float* a, float* out, std::size_t count, double* scratch, cudaStream_t stream);

// out[i] = parts[0][i] + ... + parts[n_parts - 1][i], in that order, in float (the cpu's sums, bit
// for bit); the parts may be peers' memory (peer access enabled). n_parts <= 16.
void sum_parts(float* out, const float* const* parts, std::size_t n_parts, std::size_t count,
               cudaStream_t stream);

} // namespace ag::cuda
