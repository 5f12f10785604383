// Reductions and the network operators on the caller's thread: each runs over a contiguous tensor
// read as [m, k, n] (m outer, k the dimension it runs along, n inner) or as rows [m, k]
// (graph/op.hpp), a view being copied first.
#include <string>

#include "actorgraph/error.hpp"
#include "actorgraph/ops.hpp"
#include "graph/op_table.hpp"
#include "graph/runtime_core.hpp"

namespace ag {

using detail::tensor_node;

namespace {

int64_t product(const shape_t& s, std::size_t from, std::size_t to) {
  int64_t p = 1;
  for (std::size_t i = from; i < to; ++i)
    p *= s[i];
  return p;
}

void check_floating(const char* name, const tensor& x) {
  if (!is_floating(x.dtype()))
    throw error(std::string{name} + ": takes float32, float16 or bfloat16, got " + x.str());
}

// One operator over x (contiguous) as [m, k, n] with dims [d0, d1) as k.
tensor over_dims(op_kind kind, const tensor& x, std::size_t d0, std::size_t d1, shape_t out_shape) {
  const char* name = info(kind).name;
  const auto& a = tensor_node::of(x, name);
  auto rt = a.live(name);
  op_request req;
  req.kind = kind;
  req.where = a.where;
  req.type = kind == op_kind::argmax ? dtype::int64 : a.type;
  req.in_type = a.type;
  req.a = a.id;
  req.m = static_cast<uint64_t>(product(a.shape, 0, d0));
  req.k = static_cast<uint64_t>(product(a.shape, d0, d1));
  req.n = static_cast<uint64_t>(product(a.shape, d1, a.shape.size()));
  req.count = detail::element_count(out_shape, name);
  return detail::submit(rt, std::move(req), std::move(out_shape));
}

// A reduction over dims, a run of neighbouring dimensions at a time from the last.
tensor reduce(op_kind kind, const tensor& t, const std::vector<int64_t>& dims, bool keepdim) {
  const char* name = kind == op_kind::reduce_sum    ? "sum"
                     : kind == op_kind::reduce_mean ? "mean"
                     : kind == op_kind::reduce_max  ? "max"
                                                    : "argmax";
  check_floating(name, t);
  tensor x = detail::materialized(t, name);
  const shape_t shape = x.shape();
  const auto reduced = detail::reduced_dims(shape, dims, name);
  if (shape.empty()) // a scalar: over its one element
    return over_dims(kind, x, 0, 0, shape);
  shape_t kept = shape;
  for (std::size_t r = reduced.size(); r > 0;) {
    std::size_t last = reduced[--r], first = last;
    while (r > 0 && reduced[r - 1] == first - 1)
      first = reduced[--r];
    shape_t out = kept;
    for (std::size_t d = first; d <= last; ++d)
      out[d] = 1;
    x = over_dims(kind, x, first, last + 1, out);
    kept = out;
  }
  return keepdim ? x : x.reshape(detail::reduce_shape(shape, reduced, false));
}

} // namespace

tensor tensor::sum(const std::vector<int64_t>& dims, bool keepdim) const {
  return reduce(op_kind::reduce_sum, *this, dims, keepdim);
}
tensor tensor::mean(const std::vector<int64_t>& dims, bool keepdim) const {
  return reduce(op_kind::reduce_mean, *this, dims, keepdim);
}
tensor tensor::max(int64_t dim, bool keepdim) const {
  return reduce(op_kind::reduce_max, *this, {dim}, keepdim);
}
tensor tensor::argmax(int64_t dim, bool keepdim) const {
  return reduce(op_kind::argmax, *this, {dim}, keepdim);
}

namespace {

tensor softmax_of(op_kind kind, const tensor& t, int64_t dim) {
  const char* name = info(kind).name;
  check_floating(name, t);
  const tensor x = detail::materialized(t, name);
  const auto& shape = x.shape();
  if (shape.empty())
    return over_dims(kind, x, 0, 0, shape);
  const auto d = detail::wrap_dim(dim, shape.size(), name);
  return over_dims(kind, x, d, d + 1, shape);
}

// weight or bias of a norm over rows of `width`: undefined, or [width] of x's dtype and device.
operand_id norm_operand(const char* name, const char* what, const tensor& x, const tensor& p,
                        int64_t width, tensor& held) {
  if (!p.defined())
    return 0;
  if (p.shape() != shape_t{width} || p.dtype() != x.dtype() || p.device() != x.device())
    throw error(std::string{name} + ": " + what + " must be " + to_string(x.dtype()) + "["
                + std::to_string(width) + "] on " + x.device().str() + ", got " + p.str()
                + " (input " + x.str() + ")");
  held = detail::materialized(p, name);
  return tensor_node::of(held, name).id;
}

tensor norm(op_kind kind, const tensor& t, const tensor& weight, const tensor& bias, double eps) {
  const char* name = info(kind).name;
  check_floating(name, t);
  if (t.shape().empty())
    throw error(std::string{name} + ": needs at least one dimension, got " + t.str());
  const tensor x = detail::materialized(t, name);
  const auto& a = tensor_node::of(x, name);
  auto rt = a.live(name);
  const int64_t width = a.shape.back();
  tensor w, b;
  op_request req;
  req.kind = kind;
  req.where = a.where;
  req.type = req.in_type = a.type;
  req.a = a.id;
  req.b = norm_operand(name, "weight", x, weight, width, w);
  req.c = norm_operand(name, "bias", x, bias, width, b);
  req.k = static_cast<uint64_t>(width);
  req.count = detail::element_count(a.shape, name);
  req.m = width == 0 ? 0 : req.count / req.k;
  req.scalar = eps;
  return detail::submit(rt, std::move(req), a.shape);
}

void check_indices(const char* name, const tensor& values, const tensor& indices) {
  if (indices.dtype() != dtype::int32 && indices.dtype() != dtype::int64)
    throw error(std::string{name} + ": indices must be int32 or int64: values " + values.str()
                + ", indices " + indices.str());
  if (indices.device() != values.device())
    throw error(std::string{name} + ": device mismatch: values " + values.str() + ", indices "
                + indices.str());
}

// out[r] = x[r, indices[r]] for x [m, k].
tensor gather_rows(const tensor& logits, const tensor& targets) {
  const tensor x = detail::materialized(logits, "gather");
  const tensor i = detail::materialized(targets, "gather");
  const auto& a = tensor_node::of(x, "gather");
  auto rt = a.live("gather");
  op_request req;
  req.kind = op_kind::gather;
  req.where = a.where;
  req.type = a.type;
  req.in_type = i.dtype();
  req.a = a.id;
  req.b = tensor_node::of(i, "gather").id;
  req.m = static_cast<uint64_t>(a.shape[0]);
  req.k = static_cast<uint64_t>(a.shape[1]);
  req.count = req.m;
  return detail::submit(rt, std::move(req), shape_t{a.shape[0]});
}

} // namespace

tensor softmax(const tensor& x, int64_t dim) { return softmax_of(op_kind::softmax, x, dim); }
tensor log_softmax(const tensor& x, int64_t dim) {
  return softmax_of(op_kind::log_softmax, x, dim);
}

tensor layer_norm(const tensor& x, const tensor& weight, const tensor& bias, double eps) {
  return norm(op_kind::layer_norm, x, weight, bias, eps);
}

tensor rms_norm(const tensor& x, const tensor& weight, double eps) {
  return norm(op_kind::rms_norm, x, weight, tensor{}, eps);
}

tensor embedding(const tensor& table, const tensor& indices) {
  check_floating("embedding", table);
  check_indices("embedding", table, indices);
  if (table.shape().size() != 2)
    throw error("embedding: the table must be 2-D, got " + table.str());
  const tensor t = detail::materialized(table, "embedding");
  const tensor i = detail::materialized(indices, "embedding");
  const auto& a = tensor_node::of(t, "embedding");
  auto rt = a.live("embedding");
  shape_t out = i.shape();
  out.push_back(a.shape[1]);
  op_request req;
  req.kind = op_kind::embedding;
  req.where = a.where;
  req.type = a.type;
  req.in_type = i.dtype();
  req.a = a.id;
  req.b = tensor_node::of(i, "embedding").id;
  req.m = static_cast<uint64_t>(a.shape[0]);
  req.k = static_cast<uint64_t>(a.shape[1]);
  req.n = detail::element_count(i.shape(), "embedding");
  req.count = detail::element_count(out, "embedding");
  return detail::submit(rt, std::move(req), std::move(out));
}

tensor cross_entropy(const tensor& logits, const tensor& targets) {
  check_floating("cross_entropy", logits);
  check_indices("cross_entropy", logits, targets);
  if (logits.shape().size() != 2 || targets.shape().size() != 1
      || targets.shape()[0] != logits.shape()[0])
    throw error("cross_entropy: logits [N, C] and targets [N]: logits " + logits.str()
                + ", targets " + targets.str());
  return -gather_rows(log_softmax(logits, 1), targets).mean();
}

} // namespace ag
