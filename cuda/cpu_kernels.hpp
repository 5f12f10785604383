// The CPU reference kernels: what cpu and sim devices run, and what every CUDA kernel is tested
// against. Plain loops over float32, deterministic (sum accumulates in double, in order).
#pragma once

#include <cstddef>

#include "cuda/elementwise_call.hpp"
#include "cuda/row_call.hpp"
#include "graph/op.hpp"
#include "graph/philox.hpp"

namespace ag::cpu {

// count elements of t, each `value` as astype converts it.
void fill(dtype t, void* out, std::size_t count, double value) noexcept;
// Every elementwise operator (graph/op_table.hpp), as the call says (cpu_elementwise.cpp).
void elementwise(const elementwise_call& call) noexcept;
// The reductions, softmaxes, norms, index and random operators (cpu_rows.cpp): sums in double, in
// order. Throws ag::error naming an index out of range.
void rows(const row_call& call);
void random(random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first, float a,
            float b) noexcept;
void sum(const float* a, float* out, std::size_t count) noexcept;
// A batch of matrix products: for each out[i, j], the products summed in float in the order of
// p (row-major float32 [m, k] x [k, n]: plain_matmul).
void matmul(const matmul_call& call) noexcept;
inline void matmul(const float* a, const float* b, float* out, std::size_t m, std::size_t k,
                   std::size_t n) noexcept {
  matmul(plain_matmul(dtype::float32, a, b, out, static_cast<int64_t>(m), static_cast<int64_t>(k),
                      static_cast<int64_t>(n)));
}

} // namespace ag::cpu
