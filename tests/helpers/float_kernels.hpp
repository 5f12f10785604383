// The float32 kernels as tests call them: a contiguous elementwise call on a kernel stream, or on
// the cpu reference kernels.
#pragma once

#include <cstddef>

#include "cuda/cpu_kernels.hpp"
#include "cuda/kernel_stream.hpp"

namespace ag::test {

inline void binary(op_kind kind, const float* a, const float* b, float* out, std::size_t n) {
  cpu::elementwise(contiguous_call(kind, dtype::float32, out, a, b, n));
}
inline void relu(const float* a, float* out, std::size_t n) {
  cpu::elementwise(contiguous_call(op_kind::relu, dtype::float32, out, a, nullptr, n));
}
inline void fill(float* out, std::size_t n, float value) {
  cpu::fill(dtype::float32, out, n, value);
}

inline void binary(kernel_stream& s, op_kind kind, const float* a, const float* b, float* out,
                   std::size_t n) {
  s.elementwise(contiguous_call(kind, dtype::float32, out, a, b, n));
}
inline void relu(kernel_stream& s, const float* a, float* out, std::size_t n) {
  s.elementwise(contiguous_call(op_kind::relu, dtype::float32, out, a, nullptr, n));
}
inline void fill(kernel_stream& s, float* out, std::size_t n, float value) {
  s.fill(dtype::float32, out, n, value);
}

} // namespace ag::test
