// One matrix product as a kernel runs it: out[b..., i, j] = sum over p of a[b..., i, p] *
// b[b..., p, j], for every batch index b... (broadcast: a batch stride of 0 repeats an operand), each
// operand read with its own strides (a transposed operand is a stride, not a copy), out
// contiguous [batch..., m, n]. float16 and bfloat16 operands are multiplied and accumulated in
// float32 and rounded once. The cpu and CUDA kernels take the same call.
#pragma once

#include <cstdint>

#include "actorgraph/dtype.hpp"
#include "graph/op.hpp"

namespace ag {

struct matmul_call {
  static constexpr int max_batch = 5;

  dtype type = dtype::float32;
  const void* a = nullptr;
  const void* b = nullptr;
  void* out = nullptr;
  int batch_rank = 0;
  int64_t batch[max_batch] = {};
  int64_t a_batch[max_batch] = {};
  int64_t b_batch[max_batch] = {};
  int64_t m = 0, n = 0, k = 0;
  int64_t a_m = 0, a_k = 1; // a's strides along m and k
  int64_t b_k = 0, b_n = 1; // b's strides along k and n

  int64_t batches() const noexcept {
    int64_t p = 1;
    for (int d = 0; d < batch_rank; ++d)
      p *= batch[d];
    return p;
  }
};

// Row-major contiguous [m, k] x [k, n] of t.
inline matmul_call plain_matmul(dtype t, const void* a, const void* b, void* out, int64_t m,
                                int64_t k, int64_t n) noexcept {
  matmul_call c;
  c.type = t;
  c.a = a;
  c.b = b;
  c.out = out;
  c.m = m;
  c.k = k;
  c.n = n;
  c.a_m = k;
  c.a_k = 1;
  c.b_k = n;
  c.b_n = 1;
  return c;
}

// The call of a matmul op with a layout (graph/op.hpp): dimensions [batch..., m, n, k], a's
// strides [a_batch..., a_m, 0, a_k], b's [b_batch..., 0, b_n, b_k]; a and b at their first
// element.
matmul_call make_matmul_call(const op_desc& op, void* out, const void* a, const void* b) noexcept;

} // namespace ag
