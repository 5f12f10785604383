#include "convert.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace ag::python {

bool signals_pending(void*) {
  py::gil_scoped_acquire locked;
  return PyErr_CheckSignals() != 0; // the handler's exception stays set for the caller to raise
}

namespace {

template <class T>
py::array take(std::vector<T>&& values, const shape_t& shape, const py::dtype& type) {
  auto* held = new std::vector<T>(std::move(values));
  py::capsule owner(held, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  std::vector<py::ssize_t> strides(dims.size());
  py::ssize_t step = static_cast<py::ssize_t>(type.itemsize());
  for (std::size_t i = dims.size(); i-- > 0;) {
    strides[i] = step;
    step *= dims[i];
  }
  return py::array(type, dims, strides, held->data(), owner);
}

template <class T>
std::vector<T> read(const tensor& t) {
  waiting unlocked;
  return t.values<T>();
}

} // namespace

dtype dtype_of(const py::handle& value, const char* what) {
  if (py::isinstance<dtype>(value))
    return value.cast<dtype>();
  if (py::isinstance<py::str>(value)) {
    try {
      return parse_dtype(value.cast<std::string>());
    } catch (const error& e) {
      throw py::value_error(std::string{what} + ": " + e.what());
    }
  }
  // NumPy dtypes and scalar types (np.float32, np.dtype("int64"), "<f4").
  py::object type;
  try {
    type = py::dtype::from_args(py::reinterpret_borrow<py::object>(value));
  } catch (const py::error_already_set&) {
    throw py::type_error(std::string{what} + " must be an ag.dtype, a dtype's name or a NumPy "
                         "dtype, got " + shown(value));
  }
  const auto name = type.attr("name").cast<std::string>();
  if (name == "bool")
    return dtype::uint8;
  try {
    return parse_dtype(name);
  } catch (const error&) {
    throw py::value_error(std::string{what} + ": NumPy's " + name
                          + " has no actorgraph dtype (float32, float16, bfloat16, int32, int64, "
                            "uint8)");
  }
}

namespace {

// NumPy's dtypes by name, each made once (looked up on every read); never released, so that none
// outlives the interpreter.
const py::dtype& numpy_named(int which) {
  static const auto* made = new std::array<py::dtype, 6>{
    py::dtype("float32"), py::dtype("float16"), py::dtype("int32"),
    py::dtype("int64"),   py::dtype("uint8"),   py::dtype("uint16")};
  return (*made)[static_cast<std::size_t>(which)];
}

} // namespace

py::dtype numpy_dtype(dtype t) {
  switch (t) {
    case dtype::float16: return numpy_named(1);
    case dtype::int32: return numpy_named(2);
    case dtype::int64: return numpy_named(3);
    case dtype::uint8: return numpy_named(4);
    default: return numpy_named(0);
  }
}

py::dtype raw_numpy_dtype(dtype t) {
  return t == dtype::bfloat16 ? numpy_named(5) : numpy_dtype(t);
}

device device_of(const py::handle& value, const char* what) {
  if (value.is_none())
    return device::cpu();
  if (!py::isinstance<py::str>(value))
    throw py::type_error(std::string{what} + " must be a device's name such as \"sim:0\", got "
                         + shown(value));
  try {
    return parse_device(value.cast<std::string>());
  } catch (const error& e) {
    throw py::value_error(std::string{what} + ": " + e.what());
  }
}

std::vector<device> devices_of(const py::handle& value, const char* what) {
  if (value.is_none())
    return {};
  if (py::isinstance<py::str>(value)) {
    try {
      return parse_devices(value.cast<std::string>());
    } catch (const error& e) {
      throw py::value_error(std::string{what} + ": " + e.what());
    }
  }
  if (!py::isinstance<py::sequence>(value))
    throw py::type_error(std::string{what}
                         + " must be a device list such as \"sim:0,sim:1\" or a list of names, got "
                         + shown(value));
  std::vector<device> out;
  for (const auto& item : value.cast<py::sequence>())
    out.push_back(device_of(item, what));
  return out;
}

namespace {

double seconds_from(const py::handle& value, const char* what) {
  if (!py::isinstance<py::int_>(value) && !py::isinstance<py::float_>(value))
    throw py::type_error(std::string{what} + " must be a number of seconds, got " + shown(value));
  const double s = value.cast<double>();
  if (std::isnan(s) || s < 0)
    throw py::value_error(std::string{what} + " must be 0 or more seconds (inf: no deadline), got "
                          + shown(value));
  return s;
}

} // namespace

std::chrono::milliseconds millis_of(const py::handle& value, const char* what) {
  const double s = seconds_from(value, what);
  // Past a hundred years is no deadline (graph_option.hpp).
  if (s * 1e3 >= double(std::chrono::milliseconds::max().count()))
    return std::chrono::milliseconds::max();
  return std::chrono::milliseconds{static_cast<int64_t>(std::llround(s * 1e3))};
}

std::chrono::microseconds micros_of(const py::handle& value, const char* what) {
  const double s = seconds_from(value, what);
  if (s * 1e6 >= double(std::chrono::microseconds::max().count()))
    return std::chrono::microseconds::max();
  return std::chrono::microseconds{static_cast<int64_t>(std::llround(s * 1e6))};
}

double seconds_of(std::chrono::milliseconds d) {
  return d == std::chrono::milliseconds::max() ? std::numeric_limits<double>::infinity()
                                               : double(d.count()) / 1e3;
}

std::vector<int64_t> dims_of(const py::handle& value, const char* what) {
  if (value.is_none())
    return {};
  if (py::isinstance<py::int_>(value))
    return {value.cast<int64_t>()};
  if (py::isinstance<py::sequence>(value) && !py::isinstance<py::str>(value)) {
    std::vector<int64_t> out;
    for (const auto& item : value.cast<py::sequence>()) {
      if (!py::isinstance<py::int_>(item))
        throw py::type_error(std::string{what} + " must hold ints, got " + shown(item));
      out.push_back(item.cast<int64_t>());
    }
    return out;
  }
  throw py::type_error(std::string{what} + " must be an int or a sequence of ints, got "
                       + shown(value));
}

tensor tensor_of(const py::handle& value, const device& where, const py::handle& type,
                 const bytes_maker& make) {
  auto np = py::module_::import("numpy");
  py::array array = py::isinstance<py::array>(value)
                      ? py::reinterpret_borrow<py::array>(value)
                      : py::array(np.attr("asarray")(value));
  dtype t;
  if (!type.is_none()) {
    t = dtype_of(type, "dtype");
  } else {
    const auto kind = array.dtype().kind();
    if (kind == 'f')
      t = array.dtype().itemsize() == 2 ? dtype::float16 : dtype::float32;
    else if (kind == 'b')
      t = dtype::uint8;
    else if (kind == 'i' || kind == 'u')
      t = dtype_of(array.dtype(), "tensor");
    else
      throw py::type_error("tensor: cannot hold values of NumPy's " +
                           array.dtype().attr("name").cast<std::string>() + " (from "
                           + shown(py::type::handle_of(value)) + ")");
  }
  // The array as C-contiguous values of the NumPy dtype that holds t (a copy only when needed).
  py::array values =
    np.attr("asarray")(array, py::arg("dtype") = numpy_dtype(t), py::arg("order") = "C")
      .cast<py::array>();
  shape_t shape(values.shape(), values.shape() + values.ndim());
  const auto count = static_cast<std::size_t>(values.size());
  if (t == dtype::bfloat16) { // rounded to nearest even, as ag::bfloat16 does
    std::vector<bfloat16> bits(count);
    const auto* f = static_cast<const float*>(values.data());
    for (std::size_t i = 0; i < count; ++i)
      bits[i] = bfloat16(f[i]);
    return make(shape, t, bits.data(), count * 2, where);
  }
  return make(shape, t, values.data(), count * size_of(t), where);
}

namespace {

// A read-only array over a cpu tensor's bytes in the store, which it keeps (tensor::host_bytes).
py::array in_place(const tensor& t, const py::dtype& type) {
  std::shared_ptr<const void> bytes;
  {
    waiting unlocked;
    bytes = t.host_bytes();
  }
  const void* data = bytes.get();
  auto* held = new std::shared_ptr<const void>(std::move(bytes));
  py::capsule owner(held, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  const auto& shape = t.shape();
  std::vector<py::ssize_t> dims(shape.begin(), shape.end()), strides(dims.size());
  py::ssize_t step = static_cast<py::ssize_t>(type.itemsize());
  for (std::size_t i = dims.size(); i-- > 0;) {
    strides[i] = step;
    step *= dims[i];
  }
  py::array a(type, dims, strides, data, owner);
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

} // namespace

py::array array_of(const tensor& t, bool raw) {
  const auto& shape = t.shape();
  if (t.device().is_cpu() && (t.dtype() != dtype::bfloat16 || raw))
    return in_place(t, raw_numpy_dtype(t.dtype()));
  switch (t.dtype()) {
    case dtype::float32: return take(read<float>(t), shape, numpy_dtype(dtype::float32));
    case dtype::float16: return take(read<half>(t), shape, numpy_dtype(dtype::float16));
    case dtype::bfloat16:
      if (raw)
        return take(read<bfloat16>(t), shape, raw_numpy_dtype(dtype::bfloat16));
      return take(
        [&] {
          waiting unlocked;
          return t.to_vector();
        }(),
        shape, numpy_dtype(dtype::float32));
    case dtype::int32: return take(read<int32_t>(t), shape, numpy_dtype(dtype::int32));
    case dtype::int64: return take(read<int64_t>(t), shape, numpy_dtype(dtype::int64));
    case dtype::uint8: return take(read<uint8_t>(t), shape, numpy_dtype(dtype::uint8));
  }
  throw error("numpy: " + t.str() + " has no NumPy dtype");
}

} // namespace ag::python
