// The CPU reference kernels: what cpu and sim devices run, and what every CUDA kernel is tested
// against. Plain loops over float32, deterministic (sum accumulates in double, in order).
#pragma once

#include <cstddef>

#include "graph/op.hpp"
#include "graph/philox.hpp"

namespace ag::cpu {

void fill(float* out, std::size_t count, float value) noexcept;
// kind is one of add, sub, mul, div.
void binary(op_kind kind, const float* a, const float* b, float* out, std::size_t count) noexcept;
void relu(const float* a, float* out, std::size_t count) noexcept;
void random(random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first, float a,
            float b) noexcept;
void sum(const float* a, float* out, std::size_t count) noexcept;
void matmul(const float* a, const float* b, float* out, std::size_t m, std::size_t k,
            std::size_t n) noexcept;

} // namespace ag::cpu
