// Tensor handles on the caller's thread: metadata, moves, reads and the operators that predate the
// table (matmul, sum). Nothing here waits, except the reads.
#include "actorgraph/tensor.hpp"

#include <cstring>
#include <new>
#include <string>

#include "actorgraph/error.hpp"
#include "graph/runtime_core.hpp"

namespace ag {

namespace detail {

tensor_node::~tensor_node() {
  if (base)
    return; // a view: its base releases the operand
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

tensor tensor_node::view(const tensor& t, shape_t shape, shape_t strides, int64_t offset) {
  const auto& x = t.checked("view");
  const auto owner = x.base ? x.base : t.node_;
  const uint64_t elements = x.base ? x.operand_elements : element_count(x.shape, "view");
  const bool whole = offset == 0 && element_count(shape, "view") == elements
                     && [&] {
                          const auto row_major = contiguous_strides(shape);
                          for (std::size_t i = 0; i < shape.size(); ++i)
                            if (shape[i] != 1 && strides[i] != row_major[i])
                              return false;
                          return true;
                        }();
  if (whole && !x.base && shape == x.shape)
    return t;
  auto v = std::make_shared<tensor_node>(x.runtime, x.id, std::move(shape), x.where, x.type);
  v->base = owner;
  v->operand_elements = elements;
  if (!whole) {
    v->strides = std::move(strides);
    v->offset = offset;
  }
  return tensor{std::move(v)};
}

tensor submit(const std::shared_ptr<runtime_core>& rt, op_request&& req, shape_t shape) {
  req.out = rt->next_id();
  const operand_id out = req.out;
  const device where = req.where;
  const dtype type = req.type;
  const uint64_t staged = req.staged;
  const uint64_t bytes = staged == operand_ref::no_offset ? 0 : req.bytes();
  try {
    rt->submit(std::move(req));
  } catch (...) { // refused: the range its values were written into goes back
    if (staged != operand_ref::no_offset)
      rt->unstage(staged, bytes);
    throw;
  }
  return tensor_node::make(rt, out, std::move(shape), where, type);
}

tensor materialized(const tensor& t, const char* what) {
  const auto& x = tensor_node::of(t, what);
  return x.whole() ? t : t.contiguous();
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
int64_t tensor::dim() const { return static_cast<int64_t>(checked("dim").shape.size()); }
bool tensor::is_contiguous() const {
  const auto& x = checked("is_contiguous");
  return x.whole();
}

tensor tensor::sum() const {
  const auto& a = checked("sum");
  if (a.type != ag::dtype::float32)
    return sum(std::vector<int64_t>{}, false);
  auto rt = a.live("sum");
  const tensor x = detail::materialized(*this, "sum");
  op_request req;
  req.kind = op_kind::sum;
  req.where = a.where;
  req.a = tensor_node::of(x, "sum").id;
  req.count = detail::element_count(a.shape, "sum");
  return detail::submit(rt, std::move(req), shape_t{});
}

tensor tensor::to(const ag::device& target) const {
  const auto& a = checked("to");
  if (target == a.where)
    return *this;
  auto rt = a.live("to");
  if (!rt->has_device(target))
    throw error("to: " + target.str() + " is not a device of this runtime (moving " + str() + ")");
  const tensor x = detail::materialized(*this, "to");
  op_request req;
  req.kind = op_kind::copy;
  req.where = target;
  req.type = req.in_type = a.type;
  req.a = tensor_node::of(x, "to").id;
  req.count = detail::element_count(a.shape, "to");
  return detail::submit(rt, std::move(req), a.shape);
}

void tensor::read_bytes(ag::dtype type, const char* what, void* ctx,
                        char* (*into)(void*, std::size_t)) const {
  const auto& a = checked(what);
  if (type != a.type)
    throw error(std::string{what} + "<" + to_string(type) + ">: the tensor is " + str());
  if (!a.whole())
    return detail::materialized(*this, what).read_bytes(type, what, ctx, into);
  auto rt = a.live(what);
  const uint64_t count = detail::element_count(a.shape, what);
  const uint64_t bytes = bytes_of(a.type, count, what);
  auto destination = [&]() -> char* {
    try {
      return into(ctx, static_cast<std::size_t>(count));
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    throw error(std::string{what} + " of " + str() + ": out of host memory for its "
                + std::to_string(count) + " values (" + std::to_string(bytes) + " bytes)");
  };
  if (a.where.is_cpu())
    return rt->read(a.id, bytes, destination);
  if (rt->piecewise(bytes))
    return rt->read_device(a.id, bytes, destination);
  to(device::cpu()).read_bytes(type, what, ctx, into);
}

std::shared_ptr<const void> tensor::host_bytes() const {
  constexpr const char* what = "host_bytes";
  const auto& a = checked(what);
  if (!a.whole())
    return detail::materialized(*this, what).host_bytes();
  if (!a.where.is_cpu())
    throw error(std::string{what} + ": " + str() + " is not on the cpu (move it there with to())");
  auto rt = a.live(what);
  const uint64_t bytes = bytes_of(a.type, detail::element_count(a.shape, what), what);
  // The pointer keeps the store mapped, the tensor keeps its range.
  struct held {
    std::shared_ptr<const std::byte> bytes;
    tensor owner;
  };
  auto h = std::make_shared<held>(held{rt->view(a.id, bytes), *this});
  const void* p = h->bytes.get();
  return {std::move(h), p};
}

std::shared_ptr<void> tensor::device_bytes(std::intptr_t stream) const {
  constexpr const char* what = "device_bytes";
  const auto& a = checked(what);
  if (!a.whole())
    return detail::materialized(*this, what).device_bytes(stream);
  if (a.where.is_cpu())
    throw error(std::string{what} + ": " + str() + " is on the cpu (use host_bytes)");
  if (stream == 0 || stream < -1)
    throw error(std::string{what} + ": stream " + std::to_string(stream)
                + " is not a stream (-1: none, 1: the legacy default, 2: the per-thread default, "
                  "or a cudaStream_t)");
  auto rt = a.live(what);
  const uint64_t bytes = bytes_of(a.type, detail::element_count(a.shape, what), what);
  // The tensor keeps its operand (while the runtime lives), the lane's stream the memory.
  struct held {
    std::shared_ptr<void> memory;
    tensor owner;
  };
  auto h = std::make_shared<held>(held{rt->share(a.id, bytes, stream), *this});
  void* p = h->memory.get();
  return {std::move(h), p};
}

namespace {

// The values of t (of dtype T) as floats.
template <class T>
std::vector<float> as_floats(const std::vector<T>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = static_cast<float>(v[i]);
  return out;
}

} // namespace

std::vector<float> tensor::to_vector() const {
  constexpr const char* what = "to_vector";
  switch (checked(what).type) {
    case ag::dtype::float32: return read_as<float>(what);
    case ag::dtype::float16: return as_floats(read_as<half>(what));
    case ag::dtype::bfloat16: return as_floats(read_as<bfloat16>(what));
    case ag::dtype::int32: return as_floats(read_as<int32_t>(what));
    case ag::dtype::int64: return as_floats(read_as<int64_t>(what));
    case ag::dtype::uint8: return as_floats(read_as<uint8_t>(what));
  }
  throw error("to_vector: " + str() + " has no dtype");
}

} // namespace ag
