// Views (reshape, transpose, permute, slice): new shapes and strides over the same operand, made on
// the caller's thread without an operator. Tensors are never written in place, so a view keeps
// the values its base had. contiguous() and astype() make a tensor of its own.
#include <string>

#include "actorgraph/error.hpp"
#include "actorgraph/ops.hpp"
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
  if (!a.whole()) { // a view: at least one dimension, its strides (b's and c's are 0)
    req.layout.shape = a.shape;
    req.layout.strides = a.strides;
    req.layout.strides.resize(3 * a.shape.size(), 0);
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

namespace {

// One concat of up to three tensors of one dtype and device, joined along dim (rows of outer).
tensor concat(const std::vector<tensor>& parts, std::size_t dim, const shape_t& out_shape) {
  const auto& first = tensor_node::of(parts.front(), "cat");
  auto rt = first.live("cat");
  int64_t outer = 1;
  for (std::size_t d = 0; d < dim; ++d)
    outer *= out_shape[d];
  op_request req;
  req.kind = op_kind::concat;
  req.where = first.where;
  req.type = req.in_type = first.type;
  req.m = static_cast<uint64_t>(outer);
  req.count = detail::element_count(out_shape, "cat");
  operand_id* ids[3] = {&req.a, &req.b, &req.c};
  uint64_t* widths[2] = {&req.k, &req.n};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& n = tensor_node::of(parts[i], "cat");
    *ids[i] = n.id;
    if (i < 2)
      *widths[i] = outer == 0 ? 0 : detail::element_count(n.shape, "cat") / static_cast<uint64_t>(outer);
  }
  return detail::submit(rt, std::move(req), out_shape);
}

} // namespace

tensor cat(const std::vector<tensor>& tensors, int64_t dim) {
  std::vector<shape_t> shapes;
  for (const auto& t : tensors)
    shapes.push_back(tensor_node::of(t, "cat").shape);
  const shape_t out = detail::cat_shape(shapes, dim, "cat");
  const auto& first = tensor_node::of(tensors.front(), "cat");
  for (std::size_t i = 1; i < tensors.size(); ++i) {
    const auto& n = tensor_node::of(tensors[i], "cat");
    if (n.type != first.type || n.where != first.where || n.runtime.lock() != first.runtime.lock())
      throw error("cat: tensor " + std::to_string(i) + " (" + tensors[i].str()
                  + ") does not match tensor 0 (" + tensors.front().str()
                  + ") in dtype, device or runtime");
  }
  const std::size_t d = detail::wrap_dim(dim, out.size(), "cat");
  if (tensors.size() == 1)
    return tensors.front();
  // Three at a time: the result so far and the next two.
  std::vector<tensor> parts{detail::materialized(tensors[0], "cat")};
  shape_t joined = tensors[0].shape();
  for (std::size_t i = 1; i < tensors.size(); ++i) {
    parts.push_back(detail::materialized(tensors[i], "cat"));
    joined[d] += tensors[i].shape()[d];
    if (parts.size() == 3 || i + 1 == tensors.size()) {
      const tensor t = concat(parts, d, joined);
      parts = {t};
    }
  }
  return parts.front();
}

} // namespace ag
