// The CPU reference kernels: what cpu and sim devices run, and what every CUDA kernel is tested
// against. Plain loops over float32, deterministic (sum accumulates in double, in order).
#pragma once

#include <cstddef>

#include "cuda/elementwise_call.hpp"
#include "graph/op.hpp"
#include "graph/philox.hpp"

namespace ag::cpu {

// count elements of t, each `value` as astype converts it.
void fill(dtype t, void* out, std::size_t count, double value) noexcept;
// Every elementwise operator (graph/op_table.hpp), as the call says (cpu_elementwise.cpp).
void elementwise(const elementwise_call& call) noexcept;
void random(random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first, float a,
            float b) noexcept;
void sum(const float* a, float* out, std::size_t count) noexcept;
void matmul(const float* a, const float* b, float* out, std::size_t m, std::size_t k,
            std::size_t n) noexcept;

} // namespace ag::cpu
