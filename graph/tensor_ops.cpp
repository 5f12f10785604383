// The elementwise operators on the caller's thread (actorgraph/ops.hpp): checked against the
// operator table (graph/op_table.hpp), broadcast, and sent as one operator each, with a layout
// (op_desc::layout) when an operand is broadcast or a view.
#include <cmath>
#include <initializer_list>
#include <string>

#include "actorgraph/error.hpp"
#include "actorgraph/ops.hpp"
#include "graph/op_table.hpp"
#include "graph/runtime_core.hpp"

namespace ag {

using detail::tensor_node;

namespace {

const char* const operand_names[3] = {"lhs", "rhs", "third"};

// "lhs float32[2,3] on cpu, rhs float32[4] on cpu".
std::string operands_string(std::initializer_list<const tensor*> xs, const char* const* names) {
  std::string s;
  std::size_t i = 0;
  for (const tensor* x : xs) {
    s += (i == 0 ? "" : ", ") + std::string{names[i]} + " " + x->str();
    ++i;
  }
  return s;
}

// A scalar operand of a tensor of dtype t: whole for an integer dtype.
void check_scalar(const char* name, double s, const tensor& x) {
  if (!is_floating(x.dtype()) && std::isfinite(s) && s != std::trunc(s))
    throw error(std::string{name} + ": the scalar " + std::to_string(s)
                + " is not a whole number, and the tensor is " + x.str()
                + " (astype(float32) first)");
  if (!is_floating(x.dtype()) && !(std::fabs(s) < 9223372036854775808.0))
    throw error(std::string{name} + ": the scalar " + std::to_string(s) + " does not fit "
                + x.str() + " (an integer operator computes in int64)");
}

// One elementwise operator over xs (one to three tensors; a scalar stands for a missing second
// operand), its result of dtype `out_type`; `attribute` travels in op_desc::k (gelu's
// approximation; 1 for a scalar on the left).
tensor elementwise(op_kind kind, std::initializer_list<const tensor*> xs, dtype out_type,
                   const char* const* names = operand_names, const double* scalar = nullptr,
                   uint64_t attribute = 0) {
  const op_info& row = info(kind);
  const char* name = row.name;
  for (const tensor* x : xs)
    tensor_node::of(*x, name);
  auto fail = [&](const std::string& what) {
    return error(std::string{name} + ": " + what + ": " + operands_string(xs, names));
  };
  const tensor_node& first = tensor_node::of(**xs.begin(), name);
  const auto rt = first.live(name);
  shape_t shape = first.shape;
  for (const tensor* x : xs) {
    const auto& n = tensor_node::of(*x, name);
    if (n.where != first.where)
      throw fail("device mismatch");
    if (n.runtime.lock() != rt)
      throw fail("runtime mismatch");
    if (shape != n.shape) {
      try {
        shape = detail::broadcast_shapes(shape, n.shape, name);
      } catch (const error&) {
        throw fail("shape mismatch (shapes do not broadcast)");
      }
    }
  }
  op_request req;
  req.kind = kind;
  req.where = first.where;
  req.type = out_type;
  req.in_type = first.type;
  req.count = detail::element_count(shape, name);
  if (scalar)
    req.scalar = *scalar;
  req.k = attribute;
  bool plain = true;
  for (const tensor* x : xs) {
    const auto& n = tensor_node::of(*x, name);
    plain = plain && n.whole() && n.shape == shape;
  }
  const shape_t run = shape.empty() ? shape_t{1} : shape;
  if (!plain)
    req.layout.shape = run;
  operand_id* ids[3] = {&req.a, &req.b, &req.c};
  int64_t* offsets[3] = {&req.layout.a_offset, &req.layout.b_offset, &req.layout.c_offset};
  std::size_t slot = 0;
  for (const tensor* x : xs)
    *ids[slot++] = tensor_node::of(*x, name).id;
  if (!plain) {
    req.layout.strides.assign(3 * run.size(), 0);
    slot = 0;
    for (const tensor* x : xs) {
      const auto& n = tensor_node::of(*x, name);
      const auto strides = detail::broadcast_strides(n.shape, n.element_strides(), shape);
      for (std::size_t d = 0; d < strides.size(); ++d)
        req.layout.strides[slot * run.size() + d] = strides[d];
      *offsets[slot] = n.offset;
      ++slot;
    }
  }
  return detail::submit(rt, std::move(req), std::move(shape));
}

void check_dtype(op_kind kind, const tensor& x, const tensor* y = nullptr) {
  const op_info& row = info(kind);
  if (y && x.dtype() != y->dtype())
    throw error(std::string{row.name} + ": dtype mismatch: lhs " + x.str() + ", rhs " + y->str()
                + " (astype() one of them)");
  if (!takes(row.dtypes, x.dtype()))
    throw error(std::string{row.name} + ": takes " + dtypes_string(row.dtypes) + ", got "
                + x.str());
}

tensor binary(op_kind kind, const tensor& x, const tensor& y) {
  tensor_node::of(x, info(kind).name);
  tensor_node::of(y, info(kind).name);
  check_dtype(kind, x, &y);
  const dtype out = info(kind).family == op_family::compare ? dtype::uint8 : x.dtype();
  return elementwise(kind, {&x, &y}, out);
}

tensor with_scalar(op_kind kind, const tensor& x, double s, bool scalar_first) {
  tensor_node::of(x, info(kind).name);
  check_dtype(kind, x);
  check_scalar(info(kind).name, s, x);
  const dtype out = info(kind).family == op_family::compare ? dtype::uint8 : x.dtype();
  static const char* const one[3] = {"tensor", "", ""};
  return elementwise(kind, {&x}, out, one, &s, scalar_first ? 1 : 0);
}

tensor unary(op_kind kind, const tensor& x, uint64_t attribute = 0) {
  tensor_node::of(x, info(kind).name);
  check_dtype(kind, x);
  static const char* const one[3] = {"operand", "", ""};
  return elementwise(kind, {&x}, x.dtype(), one, nullptr, attribute);
}

} // namespace

tensor operator+(const tensor& x, const tensor& y) { return binary(op_kind::add, x, y); }
tensor operator-(const tensor& x, const tensor& y) { return binary(op_kind::sub, x, y); }
tensor operator*(const tensor& x, const tensor& y) { return binary(op_kind::mul, x, y); }
tensor operator/(const tensor& x, const tensor& y) { return binary(op_kind::div, x, y); }
tensor operator+(const tensor& x, double y) { return with_scalar(op_kind::add, x, y, false); }
tensor operator-(const tensor& x, double y) { return with_scalar(op_kind::sub, x, y, false); }
tensor operator*(const tensor& x, double y) { return with_scalar(op_kind::mul, x, y, false); }
tensor operator/(const tensor& x, double y) { return with_scalar(op_kind::div, x, y, false); }
tensor operator+(double x, const tensor& y) { return with_scalar(op_kind::add, y, x, true); }
tensor operator-(double x, const tensor& y) { return with_scalar(op_kind::sub, y, x, true); }
tensor operator*(double x, const tensor& y) { return with_scalar(op_kind::mul, y, x, true); }
tensor operator/(double x, const tensor& y) { return with_scalar(op_kind::div, y, x, true); }
tensor operator-(const tensor& x) { return unary(op_kind::neg, x); }

tensor maximum(const tensor& x, const tensor& y) { return binary(op_kind::maximum, x, y); }
tensor minimum(const tensor& x, const tensor& y) { return binary(op_kind::minimum, x, y); }
tensor pow(const tensor& x, double exponent) {
  return with_scalar(op_kind::pow, x, exponent, false);
}

tensor eq(const tensor& x, const tensor& y) { return binary(op_kind::eq, x, y); }
tensor ne(const tensor& x, const tensor& y) { return binary(op_kind::ne, x, y); }
tensor lt(const tensor& x, const tensor& y) { return binary(op_kind::lt, x, y); }
tensor le(const tensor& x, const tensor& y) { return binary(op_kind::le, x, y); }
tensor gt(const tensor& x, const tensor& y) { return binary(op_kind::gt, x, y); }
tensor ge(const tensor& x, const tensor& y) { return binary(op_kind::ge, x, y); }
tensor eq(const tensor& x, double y) { return with_scalar(op_kind::eq, x, y, false); }
tensor ne(const tensor& x, double y) { return with_scalar(op_kind::ne, x, y, false); }
tensor lt(const tensor& x, double y) { return with_scalar(op_kind::lt, x, y, false); }
tensor le(const tensor& x, double y) { return with_scalar(op_kind::le, x, y, false); }
tensor gt(const tensor& x, double y) { return with_scalar(op_kind::gt, x, y, false); }
tensor ge(const tensor& x, double y) { return with_scalar(op_kind::ge, x, y, false); }

tensor where(const tensor& mask, const tensor& x, const tensor& y) {
  static const char* const names[3] = {"mask", "lhs", "rhs"};
  tensor_node::of(mask, "where");
  tensor_node::of(x, "where");
  tensor_node::of(y, "where");
  if (mask.dtype() != dtype::uint8)
    throw error("where: the mask must be uint8: " + operands_string({&mask, &x, &y}, names));
  if (x.dtype() != y.dtype())
    throw error("where: dtype mismatch: " + operands_string({&mask, &x, &y}, names));
  return elementwise(op_kind::where, {&mask, &x, &y}, x.dtype(), names);
}

tensor neg(const tensor& x) { return unary(op_kind::neg, x); }
tensor abs(const tensor& x) { return unary(op_kind::abs, x); }
tensor relu(const tensor& x) { return unary(op_kind::relu, x); }
tensor exp(const tensor& x) { return unary(op_kind::exp, x); }
tensor log(const tensor& x) { return unary(op_kind::log, x); }
tensor sqrt(const tensor& x) { return unary(op_kind::sqrt, x); }
tensor rsqrt(const tensor& x) { return unary(op_kind::rsqrt, x); }
tensor tanh(const tensor& x) { return unary(op_kind::tanh, x); }
tensor sigmoid(const tensor& x) { return unary(op_kind::sigmoid, x); }
tensor silu(const tensor& x) { return unary(op_kind::silu, x); }

tensor gelu(const tensor& x, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh")
    throw error("gelu: approximate must be \"none\" or \"tanh\", got \"" + approximate + "\" ("
                + x.str() + ")");
  return unary(op_kind::gelu, x, approximate == "tanh" ? 1 : 0);
}

tensor tensor::relu() const { return ag::relu(*this); }

} // namespace ag
