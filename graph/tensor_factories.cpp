// Tensors made from values on the caller's thread: full() and the uploads, checked there.
#include <cmath>
#include <cstring>
#include <string>

#include "actorgraph/error.hpp"
#include "graph/runtime_core.hpp"

namespace ag::detail {

namespace {

void check_device(runtime_core& rt, const device& where, const char* what,
                  const std::string& devices) {
  if (!rt.has_device(where))
    throw error(std::string{what} + ": " + where.str()
                + " is not a device of this runtime (devices: " + devices + ")");
}

void check_dtype(dtype type, const char* what) {
  if (!is_valid(type))
    throw error(std::string{what} + ": dtype #" + std::to_string(static_cast<int>(type))
                + " does not exist");
}

} // namespace

tensor full(const std::shared_ptr<runtime_core>& rt, const shape_t& shape, double value,
            const device& where, dtype type, const std::string& devices) {
  check_device(*rt, where, "full", devices);
  check_dtype(type, "full");
  if (!is_floating(type) && !(std::isfinite(value) && value == std::trunc(value)))
    throw error("full: " + std::to_string(value) + " is not a whole number, and the dtype is "
                + to_string(type));
  op_request req;
  req.kind = op_kind::fill;
  req.where = where;
  req.type = req.in_type = type;
  req.count = element_count(shape, "full");
  req.scalar = value;
  return submit(rt, std::move(req), shape);
}

tensor random(const std::shared_ptr<runtime_core>& rt, uint64_t kind, const shape_t& shape,
              double a, double b, uint64_t seed, const device& where, dtype type,
              const std::string& devices) {
  const char* what = kind == 0 ? "uniform" : "normal";
  check_device(*rt, where, what, devices);
  check_dtype(type, what);
  if (!is_floating(type))
    throw error(std::string{what} + ": takes float32, float16 or bfloat16, got "
                + to_string(type));
  if (kind == 0 && !(a < b))
    throw error("uniform: low " + std::to_string(a) + " must be below high " + std::to_string(b));
  if (kind == 1 && !(b >= 0))
    throw error("normal: std " + std::to_string(b) + " must be 0 or more");
  op_request req;
  req.kind = op_kind::random;
  req.where = where;
  req.type = req.in_type = type;
  req.count = element_count(shape, what);
  req.m = seed;
  req.k = kind;
  req.scalar = a;
  req.scalar2 = b;
  return submit(rt, std::move(req), shape);
}

tensor from_bytes(const std::shared_ptr<runtime_core>& rt, const shape_t& shape, dtype type,
                  const void* data, std::size_t nbytes, const device& where,
                  const std::string& devices) {
  check_device(*rt, where, "from_vector", devices);
  check_dtype(type, "from_bytes");
  const uint64_t count = element_count(shape, "from_vector");
  const uint64_t bytes = bytes_of(type, count, "from_vector");
  if (nbytes != bytes)
    throw error("from_vector: shape " + shape_string(shape) + " needs " + std::to_string(count)
                + " values, got " + std::to_string(nbytes / size_of(type)) + " ("
                + std::to_string(nbytes) + " bytes of " + to_string(type) + ", "
                + std::to_string(bytes) + " needed)");
  if (nbytes > 0 && data == nullptr)
    throw error("from_bytes: no data for " + std::to_string(nbytes) + " bytes");
  op_request req;
  req.kind = op_kind::upload;
  req.where = where;
  req.type = req.in_type = type;
  req.count = count;
  // The values are copied once: into a store range of their own when the store has room for it,
  // otherwise into the request (and from there into the store by the executor).
  if (auto range = nbytes > 0 ? rt->stage(nbytes) : std::nullopt) {
    std::memcpy(range->data.get(), data, nbytes);
    req.staged = range->offset;
  } else {
    const auto* p = static_cast<const char*>(data);
    req.data.assign(p, p + nbytes);
  }
  return submit(rt, std::move(req), shape);
}

} // namespace ag::detail
