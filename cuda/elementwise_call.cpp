#include "cuda/elementwise_call.hpp"

#include <cmath>
#include <cstring>

#include "graph/op_table.hpp"

namespace ag {

int operand_count(op_kind k) noexcept {
  switch (info(k).family) {
    case op_family::binary:
    case op_family::compare: return 2;
    case op_family::select: return 3;
    default: return 1;
  }
}

uint64_t fill_bits(dtype t, double value) noexcept {
  const auto f = static_cast<float>(value);
  auto whole = [value](double lo, double hi) -> int64_t {
    if (std::isnan(value))
      return 0;
    return static_cast<int64_t>(value < lo ? lo : value > hi ? hi : value);
  };
  switch (t) {
    case dtype::float32: {
      uint32_t u;
      std::memcpy(&u, &f, sizeof u);
      return u;
    }
    case dtype::float16: return half(f).bits;
    case dtype::bfloat16: return bfloat16(f).bits;
    case dtype::int32: return static_cast<uint32_t>(whole(-2147483648.0, 2147483647.0));
    case dtype::int64:
      return static_cast<uint64_t>(whole(-9223372036854775808.0, 9223372036854774784.0));
    case dtype::uint8: return static_cast<uint8_t>(whole(0.0, 255.0));
  }
  return 0;
}

matmul_call make_matmul_call(const op_desc& op, void* out, const void* a, const void* b) noexcept {
  matmul_call c;
  c.type = op.type;
  c.a = a;
  c.b = b;
  c.out = out;
  const auto& l = op.layout;
  const int dims = static_cast<int>(l.shape.size());
  c.batch_rank = 0;
  for (int d = 0; d + 3 < dims; ++d) { // batch dimensions of size 1 are no batch
    if (l.shape[static_cast<std::size_t>(d)] == 1)
      continue;
    c.batch[c.batch_rank] = l.shape[static_cast<std::size_t>(d)];
    c.a_batch[c.batch_rank] = l.strides[static_cast<std::size_t>(d)];
    c.b_batch[c.batch_rank] = l.strides[static_cast<std::size_t>(dims + d)];
    ++c.batch_rank;
  }
  const auto at = [&](int operand, int d) {
    return l.strides[static_cast<std::size_t>(operand * dims + dims - 3 + d)];
  };
  c.m = l.shape[static_cast<std::size_t>(dims - 3)];
  c.n = l.shape[static_cast<std::size_t>(dims - 2)];
  c.k = l.shape[static_cast<std::size_t>(dims - 1)];
  c.a_m = at(0, 0);
  c.a_k = at(0, 2);
  c.b_n = at(1, 1);
  c.b_k = at(1, 2);
  return c;
}

elementwise_call contiguous_call(op_kind k, dtype t, void* out, const void* a, const void* b,
                                 uint64_t count) noexcept {
  elementwise_call call;
  call.kind = k;
  call.out_type = call.in_type = t;
  call.out = out;
  call.in[0] = a;
  call.in[1] = b;
  call.count = count;
  return call;
}

elementwise_call make_elementwise_call(const op_desc& op, void* out, const void* a, const void* b,
                                       const void* c) noexcept {
  elementwise_call call;
  call.kind = op.kind;
  call.out_type = op.type;
  call.in_type = op.in_type;
  call.out = out;
  call.in[0] = a;
  call.in[1] = b;
  call.in[2] = c;
  call.count = op.count;
  // An integer operator's scalar becomes an int64 in the kernels: it is brought within range
  // here (NaN as 0), as a cast would saturate it.
  call.scalar = op.scalar;
  if (!is_floating(op.in_type))
    call.scalar = std::isnan(op.scalar)                   ? 0.0
                  : op.scalar < -9223372036854775808.0    ? -9223372036854775808.0
                  : op.scalar > 9223372036854774784.0     ? 9223372036854774784.0
                                                          : op.scalar;
  call.k = op.k;
  const auto& l = op.layout;
  const int dims = static_cast<int>(l.shape.size());
  if (dims == 0 || op.count == 0)
    return call;
  // Innermost first: drop size-1 dimensions, merge a dimension into the one inside it when every
  // operand steps over the inner one exactly.
  const int operands = operand_count(op.kind);
  // Strides of what the operator does not read (a scalar b, operands past its count) are 0, so
  // that no value the checks did not look at enters the arithmetic.
  auto read = [&](int o) { return o < operands && !(o == 1 && b == nullptr); };
  int rank = 0;
  int64_t shape[elementwise_call::max_rank];
  int64_t strides[3][elementwise_call::max_rank];
  for (int d = dims - 1; d >= 0; --d) {
    const int64_t size = l.shape[static_cast<std::size_t>(d)];
    if (size == 1)
      continue;
    int64_t s[3];
    for (int o = 0; o < 3; ++o)
      s[o] = read(o) ? l.strides[static_cast<std::size_t>(o * dims + d)] : 0;
    bool merge = rank > 0;
    for (int o = 0; o < 3 && merge; ++o)
      merge = s[o] == strides[o][rank - 1] * shape[rank - 1];
    if (merge) {
      shape[rank - 1] *= size;
      continue;
    }
    shape[rank] = size;
    for (int o = 0; o < 3; ++o)
      strides[o][rank] = s[o];
    ++rank;
  }
  bool contiguous = rank <= 1; // rank 0: every dimension is 1, one element
  for (int o = 0; o < operands && contiguous && rank == 1; ++o)
    contiguous = strides[o][0] == 1 || (o == 1 && b == nullptr);
  if (contiguous)
    return call; // one contiguous run
  call.rank = rank;
  for (int d = 0; d < rank; ++d) { // back to outermost first
    call.shape[d] = shape[rank - 1 - d];
    for (int o = 0; o < 3; ++o)
      call.strides[o][d] = strides[o][rank - 1 - d];
  }
  return call;
}

} // namespace ag
