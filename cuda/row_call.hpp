// One operator of the reduction, rows, index or random families (graph/op_table.hpp) as a kernel
// runs it: its operands' memory and the op's fields, whose meaning graph/op.hpp gives per kind.
// The cpu and CUDA kernels take the same call (cpu_kernels.hpp, cuda_kernels.cuh).
#pragma once

#include <cstdint>
#include <string>

#include "actorgraph/dtype.hpp"
#include "graph/op.hpp"

namespace ag {

struct row_call {
  op_kind kind = op_kind::reduce_sum;
  dtype type = dtype::float32;    // out's
  dtype in_type = dtype::float32; // a's (embedding, gather: b's, the indices')
  void* out = nullptr;
  const void* a = nullptr;
  const void* b = nullptr; // null where the operator takes none (a norm without weight)
  const void* c = nullptr;
  uint64_t m = 0, k = 0, n = 0, count = 0;
  double scalar = 0.0, scalar2 = 0.0;
  // CUDA: where embedding and gather report an index out of range (cuda_stream's, read when it
  // synchronizes): a flag, then the row it was at, the index, the size it had to be below, and
  // the operator's kind. Null: not reported (cpu throws at once).
  int64_t* fault = nullptr;
};

// "embedding: index 7 (at 2) is out of range for 5 entries".
std::string index_out_of_range(op_kind kind, uint64_t at, int64_t index, uint64_t size);

inline row_call make_row_call(const op_desc& op, void* out, const void* a, const void* b,
                              const void* c) noexcept {
  return {op.kind, op.type, op.in_type, out, a, b, c, op.m, op.k, op.n, op.count, op.scalar,
          op.scalar2};
}

} // namespace ag
