#include "graph/op_table.hpp"

#include <array>

namespace ag {

namespace {

using F = op_family;
using D = dtype_rule;

// In op_kind's order (checked below).
constexpr std::array<op_info, op_kind_count> table{{
  {"fill", F::fill, D::any},
  {"add", F::binary, D::any},
  {"sub", F::binary, D::any},
  {"mul", F::binary, D::any},
  {"div", F::binary, D::floating},
  {"matmul", F::matmul, D::floating},
  {"relu", F::unary, D::any},
  {"sum", F::reduction, D::float32},
  {"copy", F::transfer, D::any},
  {"upload", F::transfer, D::any},
  {"peer_copy", F::transfer, D::any},
  {"peer_sum", F::transfer, D::float32},
  {"peer_export", F::transfer, D::any},
  {"peer_forget", F::control, D::any},
  {"await", F::control, D::any},
  {"maximum", F::binary, D::any},
  {"minimum", F::binary, D::any},
  {"pow", F::binary, D::floating},
  {"eq", F::compare, D::any},
  {"ne", F::compare, D::any},
  {"lt", F::compare, D::any},
  {"le", F::compare, D::any},
  {"gt", F::compare, D::any},
  {"ge", F::compare, D::any},
  {"where", F::select, D::any},
  {"neg", F::unary, D::numeric},
  {"abs", F::unary, D::numeric},
  {"exp", F::unary, D::floating},
  {"log", F::unary, D::floating},
  {"sqrt", F::unary, D::floating},
  {"rsqrt", F::unary, D::floating},
  {"tanh", F::unary, D::floating},
  {"sigmoid", F::unary, D::floating},
  {"silu", F::unary, D::floating},
  {"gelu", F::unary, D::floating},
  {"cast", F::convert, D::any},
  {"clone", F::convert, D::any},
  {"reduce_sum", F::reduction, D::floating},
  {"reduce_mean", F::reduction, D::floating},
  {"reduce_max", F::reduction, D::floating},
  {"argmax", F::reduction, D::floating},
  {"softmax", F::rows, D::floating},
  {"log_softmax", F::rows, D::floating},
  {"layer_norm", F::rows, D::floating},
  {"rms_norm", F::rows, D::floating},
  {"embedding", F::index, D::floating},
  {"gather", F::index, D::floating},
  {"random", F::random, D::floating},
  {"concat", F::index, D::any},
}};

constexpr bool in_order() {
  const char* last = "concat";
  const char* got = table[static_cast<std::size_t>(op_kind::concat)].name;
  for (std::size_t i = 0; last[i] != 0 || got[i] != 0; ++i)
    if (last[i] != got[i])
      return false;
  return static_cast<std::size_t>(op_kind::concat) + 1 == op_kind_count;
}
static_assert(in_order(), "the table follows op_kind");

} // namespace

const op_info& info(op_kind k) noexcept {
  static constexpr op_info unknown{"op#?", F::control, D::any};
  const auto i = static_cast<std::size_t>(k);
  return i < table.size() ? table[i] : unknown;
}

bool is_elementwise(op_kind k) noexcept {
  switch (info(k).family) {
    case F::unary:
    case F::binary:
    case F::compare:
    case F::select:
    case F::convert: return true;
    default: return false;
  }
}

bool takes(dtype_rule rule, dtype t) noexcept {
  switch (rule) {
    case D::any: return is_valid(t);
    case D::floating: return is_floating(t);
    case D::numeric: return is_valid(t) && t != dtype::uint8;
    case D::float32: return t == dtype::float32;
  }
  return false;
}

const char* dtypes_string(dtype_rule rule) noexcept {
  switch (rule) {
    case D::any: return "any dtype";
    case D::floating: return "float32, float16 or bfloat16";
    case D::numeric: return "float32, float16, bfloat16, int32 or int64";
    case D::float32: return "float32";
  }
  return "no dtype";
}

} // namespace ag
