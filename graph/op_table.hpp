// The operator table: every operator's name, the family that gives its shape rule and its
// kernels, and the dtypes it takes. One row per op_kind: the user's thread checks a call against
// it (graph/tensor_ops.cpp), the runner picks the kernel by the family (cuda/naive_runner.cpp), and
// the cpu and CUDA kernels of an elementwise operator are one functor each
// (cuda/elementwise_math.hpp).
#pragma once

#include <cstdint>

#include "actorgraph/dtype.hpp"
#include "graph/op.hpp"

namespace ag {

enum class op_family : uint8_t {
  fill,      // out = scalar
  unary,     // out = f(a): shape of a
  binary,    // out = f(a, b), broadcast; b may be a scalar
  compare,   // out (uint8) = a ? b, broadcast; b may be a scalar
  select,    // out = a ? b : c, broadcast
  convert,   // cast and clone: out = a, as out's dtype and contiguous
  reduction, // sum, and over one dimension of [m, k, n]: reduce_sum, reduce_mean, reduce_max, argmax
  rows,      // softmax, log_softmax (over [m, k, n]), layer_norm, rms_norm (over rows [m, k])
  index,     // embedding, gather: rows or elements picked by integer indices; concat
  random,    // Philox draws
  matmul,
  transfer,  // copy, upload and the direct transfers
  control,   // await, peer_forget
};

// Which dtypes an operator takes.
enum class dtype_rule : uint8_t {
  any,      // every dtype
  floating, // float32, float16, bfloat16
  numeric,  // every dtype but uint8
  float32,  // float32 only (for now: sum, matmul)
};

struct op_info {
  const char* name;
  op_family family;
  dtype_rule dtypes;
};

// The row of k; a row named "op#N" of family control for a value outside the enumeration.
const op_info& info(op_kind k) noexcept;

// Whether k is an elementwise operator (unary, binary, compare, select, convert): one that runs
// over op_desc::layout.
bool is_elementwise(op_kind k) noexcept;

// Whether rule takes t.
bool takes(dtype_rule rule, dtype t) noexcept;

// "float32, float16 or bfloat16": the dtypes a rule takes, for error messages.
const char* dtypes_string(dtype_rule rule) noexcept;

} // namespace ag
