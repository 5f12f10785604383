// One elementwise operator as a kernel runs it: its operands' memory and dtypes, and the strides
// with which each is read, with every dimension that can be merged merged (a broadcast or a view
// of a contiguous tensor often becomes one or two dimensions). The cpu and CUDA kernels take the
// same call (cpu_kernels.hpp, cuda_kernels.cuh).
#pragma once

#include <cstddef>
#include <cstdint>

#include "actorgraph/dtype.hpp"
#include "cuda/matmul_call.hpp"
#include "graph/op.hpp"

namespace ag {

struct elementwise_call {
  static constexpr int max_rank = 8;

  op_kind kind = op_kind::add;
  dtype out_type = dtype::float32;
  dtype in_type = dtype::float32;
  void* out = nullptr;
  // a, b and c, each at its first element; b null (a binary operator): b is `scalar`.
  const void* in[3] = {nullptr, nullptr, nullptr};
  uint64_t count = 0; // elements of out
  // 0: every operand is contiguous, of count elements; otherwise out's shape (row-major) and
  // each operand's strides, in elements.
  int rank = 0;
  int64_t shape[max_rank] = {};
  int64_t strides[3][max_rank] = {};
  double scalar = 0.0;
  uint64_t k = 0; // gelu's approximation; 1 when the scalar is the left operand
};

// The call for op, whose operands' memory (at their first element, op.layout's offsets applied)
// is given. Dimensions of size 1 are dropped and neighbours that every operand reads as one are
// merged; a layout left with one dimension read contiguously by every operand is no layout.
elementwise_call make_elementwise_call(const op_desc& op, void* out, const void* a, const void* b,
                                       const void* c) noexcept;

// A call on contiguous operands of count elements of t (b null: a scalar b of 0).
elementwise_call contiguous_call(op_kind k, dtype t, void* out, const void* a, const void* b,
                                 uint64_t count) noexcept;

// The bits of one element of t holding `value` (in its low size_of(t) bytes): floating dtypes
// round value to float and then to t; integer dtypes round toward zero, saturate, and take NaN as
// 0, as astype does.
uint64_t fill_bits(dtype t, double value) noexcept;

// How many operands the elementwise kind k reads (1 to 3).
int operand_count(op_kind k) noexcept;

} // namespace ag
