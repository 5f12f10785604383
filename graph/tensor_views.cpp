// Views (reshape, transpose, permute, slice): new shapes and strides over the same operand, made on
// the caller's thread without an operator. Tensors are never written in place, so a view keeps
// the values its base had. contiguous() and astype() make a tensor of its own.
#include <string>

#include "actorgraph/error.hpp"
#include "actorgraph/tensor.hpp"
#include "graph/runtime_core.hpp"

namespace ag {

using detail::tensor_node;

namespace {

// A cast or a clone of x (contiguous, as `type`), as one elementwise operator.
tensor convert(const tensor& x, dtype type, op_kind kind) {
  const char* what = kind == op_kind::cast ? "astype" : "contiguous";
  const auto& a = tensor_node::of(x, what);
  auto rt = a.live(what);
  op_request req;
  req.kind = kind;
  req.where = a.where;
  req.type = type;
  req.in_type = a.type;
  req.a = a.id;
  req.count = detail::element_count(a.shape, what);
  if (!a.whole()) {
    req.layout.shape = a.shape.empty() ? shape_t{1} : a.shape;
    req.layout.strides = a.strides.empty() ? shape_t{1} : a.strides;
    req.layout.strides.resize(3 * req.layout.shape.size(), 0);
    req.layout.a_offset = a.offset;
  }
  return detail::submit(rt, std::move(req), a.shape);
}

} // namespace

tensor tensor::astype(ag::dtype type) const {
  const auto& a = checked("astype");
  if (!is_valid(type))
    throw error("astype: dtype #" + std::to_string(static_cast<int>(type)) + " does not exist ("
                + str() + ")");
  if (type == a.type)
    return *this;
  return convert(*this, type, op_kind::cast);
}

tensor tensor::contiguous() const {
  const auto& a = checked("contiguous");
  if (a.whole())
    return *this;
  return convert(*this, a.type, op_kind::clone);
}

tensor tensor::reshape(const shape_t& shape) const {
  const auto& a = checked("reshape");
  shape_t to = detail::reshape_shape(a.shape, shape, "reshape");
  if (!a.whole()) // its elements are not row-major in the operand: they are copied first
    return contiguous().reshape(to);
  auto strides = detail::contiguous_strides(to);
  return tensor_node::view(*this, std::move(to), std::move(strides), 0);
}

tensor tensor::permute(const std::vector<int64_t>& dims) const {
  const auto& a = checked("permute");
  const auto perm = detail::permutation(a.shape, dims, "permute");
  return tensor_node::view(*this, detail::permuted(a.shape, perm),
                           detail::permuted(a.element_strides(), perm), a.offset);
}

tensor tensor::transpose(int64_t d0, int64_t d1) const {
  const auto& a = checked("transpose");
  const std::size_t n = a.shape.size();
  const auto i = detail::wrap_dim(d0, n, "transpose");
  const auto j = detail::wrap_dim(d1, n, "transpose");
  if (n == 0)
    return *this;
  std::vector<int64_t> order(n);
  for (std::size_t k = 0; k < n; ++k)
    order[k] = static_cast<int64_t>(k);
  std::swap(order[i], order[j]);
  return permute(order);
}

tensor tensor::slice(int64_t dim, int64_t start, int64_t end) const {
  const auto& a = checked("slice");
  if (a.shape.empty())
    throw error("slice: " + str() + " has no dimension to slice");
  const auto d = detail::wrap_dim(dim, a.shape.size(), "slice");
  const auto bounds = detail::clamp_slice(start, end, a.shape[d]);
  shape_t shape = a.shape;
  shape[d] = bounds.size();
  const shape_t strides = a.element_strides();
  return tensor_node::view(*this, std::move(shape), strides, a.offset + bounds.start * strides[d]);
}

} // namespace ag
