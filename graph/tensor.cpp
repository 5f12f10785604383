// Tensor operators on the caller's thread: validate (shape, dtype, device), name the result, send
// the request to the executor. Nothing here waits, except to_vector().
#include "actorgraph/tensor.hpp"

#include <string>

#include "actorgraph/error.hpp"
#include "graph/runtime_core.hpp"

namespace ag {

namespace detail {

tensor_node::~tensor_node() {
  if (auto rt = runtime.lock())
    rt->release(id);
}

std::shared_ptr<runtime_core> tensor_node::live(const char* what) const {
  auto rt = runtime.lock();
  if (!rt)
    throw error(std::string{what} + ": tensor #" + std::to_string(id) + " (" + shape_string(shape)
                + " on " + where.str() + ") outlived its runtime");
  return rt;
}

tensor submit(const std::shared_ptr<runtime_core>& rt, op_request&& req, shape_t shape) {
  req.out = rt->next_id();
  const operand_id out = req.out;
  const device where = req.where;
  rt->submit(std::move(req));
  return tensor_node::make(rt, out, std::move(shape), where);
}

} // namespace detail

using detail::tensor_node;

std::string tensor::str() const {
  if (!node_)
    return "undefined tensor";
  return std::string{to_string(node_->type)} + detail::shape_string(node_->shape) + " on "
         + node_->where.str();
}

const tensor_node& tensor::checked(const char* what) const {
  if (!node_)
    throw error(std::string{what} + ": undefined tensor (default-constructed handle)");
  return *node_;
}

const shape_t& tensor::shape() const { return checked("shape").shape; }
dtype tensor::dtype() const { return checked("dtype").type; }
device tensor::device() const { return checked("device").where; }
int64_t tensor::numel() const {
  return static_cast<int64_t>(detail::element_count(checked("numel").shape, "numel"));
}

namespace {

// Validates a binary elementwise op and submits it.
tensor elementwise(op_kind kind, const tensor& x, const tensor& y, const tensor_node& a,
                   const tensor_node& b) {
  const std::string name = to_string(kind);
  auto mismatch = [&](const char* what) {
    return error(name + ": " + what + " mismatch: lhs " + x.str() + ", rhs " + y.str());
  };
  if (a.where != b.where)
    throw mismatch("device");
  if (a.type != b.type)
    throw mismatch("dtype");
  if (a.shape != b.shape)
    throw mismatch("shape");
  if (a.runtime.lock() != b.runtime.lock())
    throw mismatch("runtime");
  auto rt = a.live(name.c_str());
  op_request req;
  req.kind = kind;
  req.where = a.where;
  req.a = a.id;
  req.b = b.id;
  req.count = detail::element_count(a.shape, name.c_str());
  return detail::submit(rt, std::move(req), a.shape);
}

} // namespace

tensor operator+(const tensor& x, const tensor& y) {
  return elementwise(op_kind::add, x, y, x.checked("add"), y.checked("add"));
}
tensor operator-(const tensor& x, const tensor& y) {
  return elementwise(op_kind::sub, x, y, x.checked("sub"), y.checked("sub"));
}
tensor operator*(const tensor& x, const tensor& y) {
  return elementwise(op_kind::mul, x, y, x.checked("mul"), y.checked("mul"));
}
tensor operator/(const tensor& x, const tensor& y) {
  return elementwise(op_kind::div, x, y, x.checked("div"), y.checked("div"));
}

tensor tensor::matmul(const tensor& rhs) const {
  const auto& a = checked("matmul");
  const auto& b = rhs.checked("matmul");
  auto fail = [&](const std::string& what) {
    return error("matmul: " + what + ": lhs " + str() + ", rhs " + rhs.str());
  };
  if (a.where != b.where)
    throw fail("device mismatch");
  if (a.type != b.type)
    throw fail("dtype mismatch");
  if (a.shape.size() != 2 || b.shape.size() != 2)
    throw fail("both operands must be 2-D");
  if (a.shape[1] != b.shape[0])
    throw fail("inner dimensions differ (" + std::to_string(a.shape[1]) + " vs "
               + std::to_string(b.shape[0]) + ")");
  if (a.runtime.lock() != b.runtime.lock())
    throw fail("runtime mismatch");
  auto rt = a.live("matmul");
  op_request req;
  req.kind = op_kind::matmul;
  req.where = a.where;
  req.a = a.id;
  req.b = b.id;
  req.m = static_cast<uint64_t>(a.shape[0]);
  req.k = static_cast<uint64_t>(a.shape[1]);
  req.n = static_cast<uint64_t>(b.shape[1]);
  shape_t out_shape{a.shape[0], b.shape[1]};
  req.count = detail::element_count(out_shape, "matmul");
  return detail::submit(rt, std::move(req), std::move(out_shape));
}

namespace {

tensor unary(op_kind kind, const tensor_node& a, shape_t out_shape) {
  const std::string name = to_string(kind);
  auto rt = a.live(name.c_str());
  op_request req;
  req.kind = kind;
  req.where = a.where;
  req.a = a.id;
  req.count = detail::element_count(kind == op_kind::sum ? a.shape : out_shape, name.c_str());
  return detail::submit(rt, std::move(req), std::move(out_shape));
}

} // namespace

tensor tensor::relu() const {
  const auto& a = checked("relu");
  return unary(op_kind::relu, a, a.shape);
}

tensor tensor::sum() const { return unary(op_kind::sum, checked("sum"), shape_t{}); }

tensor tensor::to(const ag::device& target) const {
  const auto& a = checked("to");
  if (target == a.where)
    return *this;
  auto rt = a.live("to");
  if (!rt->has_device(target))
    throw error("to: " + target.str() + " is not a device of this runtime (moving " + str() + ")");
  op_request req;
  req.kind = op_kind::copy;
  req.where = target;
  req.a = a.id;
  req.count = detail::element_count(a.shape, "to");
  return detail::submit(rt, std::move(req), a.shape);
}

std::vector<float> tensor::to_vector() const {
  const auto& a = checked("to_vector");
  auto rt = a.live("to_vector");
  const uint64_t count = detail::element_count(a.shape, "to_vector");
  if (a.where.is_cpu())
    return rt->read(a.id, count);
  if (rt->piecewise(count * sizeof(float)))
    return rt->read_device(a.id, count);
  return to(device::cpu()).to_vector();
}

} // namespace ag
