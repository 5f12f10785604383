// DLPack: Tensor.__dlpack__ / __dlpack_device__ export a tensor's bytes without a copy: a cpu
// tensor's in the store (tensor::host_bytes keeps them), a device tensor's where its lane holds them
// in thread mode (tensor::device_bytes: a CUDA GPU's memory, with the protocol's stream semantics;
// a sim device's, which is host memory). tensor_of_dlpack copies another library's cpu tensor into
// the store. The structures are DLPack's (dlpack.h, ABI version 0.x), which
// NumPy and PyTorch read and write.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "bindings.hpp"
#include "convert.hpp"

namespace ag::python {

namespace {

struct dl_device {
  int32_t device_type; // 1: kDLCPU
  int32_t device_id;
};
struct dl_data_type {
  uint8_t code; // 0 int, 1 uint, 2 float, 4 bfloat
  uint8_t bits;
  uint16_t lanes;
};
struct dl_tensor_view {
  void* data;
  dl_device device;
  int32_t ndim;
  dl_data_type dtype;
  int64_t* shape;
  int64_t* strides; // in elements; null: row-major
  uint64_t byte_offset;
};
struct dl_managed_tensor {
  dl_tensor_view dl_tensor;
  void* manager_ctx;
  void (*deleter)(dl_managed_tensor* self);
};

constexpr int32_t dl_cpu = 1;
constexpr int32_t dl_cuda = 2;

// DLPack's (device type, id) of t: a sim device's memory is the host's.
std::pair<int32_t, int32_t> dl_device_of(const tensor& t) {
  if (t.device().type == device::kind::cuda)
    return {dl_cuda, cuda_ordinal(t.device())};
  return {dl_cpu, 0};
}

// The stream a consumer names (DLPack: None, or an int: -1 none, 1 and 2 CUDA's default streams,
// another a cudaStream_t; 0 is ambiguous) as tensor::device_bytes takes it.
std::intptr_t stream_of(const py::object& stream, const tensor& t) {
  if (stream.is_none()) // CUDA: the legacy default stream; elsewhere nothing to wait on
    return t.device().type == device::kind::cuda ? 1 : -1;
  if (!py::isinstance<py::int_>(stream))
    throw py::type_error("__dlpack__: stream must be None or an int, got " + shown(stream));
  const auto s = stream.cast<std::intptr_t>();
  if (s == 0 || s < -1)
    throw py::value_error("__dlpack__: stream " + std::to_string(s)
                          + " is not a stream (None, -1, 1, 2 or a cudaStream_t)");
  return t.device().type == device::kind::cuda ? s : -1;
}

dl_data_type dl_type_of(dtype t) {
  switch (t) {
    case dtype::float32: return {2, 32, 1};
    case dtype::float16: return {2, 16, 1};
    case dtype::bfloat16: return {4, 16, 1};
    case dtype::int32: return {0, 32, 1};
    case dtype::int64: return {0, 64, 1};
    case dtype::uint8: return {1, 8, 1};
  }
  return {0, 0, 0};
}

dtype dtype_of_dl(const dl_data_type& d) {
  const dtype all[] = {dtype::float32, dtype::float16, dtype::bfloat16,
                       dtype::int32,   dtype::int64,   dtype::uint8};
  for (dtype t : all) {
    const auto x = dl_type_of(t);
    if (x.code == d.code && x.bits == d.bits && d.lanes == 1)
      return t;
  }
  throw py::type_error("from_dlpack: DLPack dtype (code " + std::to_string(d.code) + ", "
                       + std::to_string(d.bits) + " bits, " + std::to_string(d.lanes)
                       + " lanes) has no actorgraph dtype");
}

// What an exported tensor keeps: its bytes and its shape.
struct exported {
  std::shared_ptr<void> bytes;
  std::vector<int64_t> shape;
  dl_managed_tensor managed{};
};

void delete_exported(dl_managed_tensor* m) { delete static_cast<exported*>(m->manager_ctx); }

py::capsule export_dlpack(const tensor& t, const py::object& stream) {
  auto e = std::make_unique<exported>();
  const auto [type, id] = dl_device_of(t);
  if (t.device().is_cpu()) {
    waiting unlocked;
    e->bytes = std::const_pointer_cast<void>(t.host_bytes());
  } else {
    const auto s = stream_of(stream, t);
    waiting unlocked;
    e->bytes = t.device_bytes(s);
  }
  e->shape = t.shape();
  auto& m = e->managed;
  m.dl_tensor.data = e->bytes.get(); // to be read only: tensors are never written
  m.dl_tensor.device = {type, id};
  m.dl_tensor.ndim = static_cast<int32_t>(e->shape.size());
  m.dl_tensor.dtype = dl_type_of(t.dtype());
  m.dl_tensor.shape = e->shape.data();
  m.dl_tensor.strides = nullptr;
  m.dl_tensor.byte_offset = 0;
  m.manager_ctx = e.get();
  m.deleter = &delete_exported;
  // A consumer renames the capsule "used_dltensor" and calls the deleter itself; an unused one
  // is deleted with the capsule.
  py::capsule cap(&m, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* managed = static_cast<dl_managed_tensor*>(PyCapsule_GetPointer(c, "dltensor"));
      managed->deleter(managed);
    }
  });
  e.release();
  return cap;
}

} // namespace

tensor tensor_of_dlpack(const py::handle& value, const device& where, const bytes_maker& make) {
  if (!py::hasattr(value, "__dlpack__"))
    throw py::type_error("from_dlpack: " + shown(py::type::handle_of(value))
                         + " has no __dlpack__");
  py::object cap = value.attr("__dlpack__")();
  auto* m = static_cast<dl_managed_tensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  if (m == nullptr)
    throw py::error_already_set();
  PyCapsule_SetName(cap.ptr(), "used_dltensor"); // ours now: the deleter runs below
  std::unique_ptr<dl_managed_tensor, void (*)(dl_managed_tensor*)> owned(
    m, [](dl_managed_tensor* x) {
      if (x->deleter)
        x->deleter(x);
    });
  const auto& d = m->dl_tensor;
  if (d.device.device_type != dl_cpu)
    throw py::buffer_error("from_dlpack: the tensor is on DLPack device type "
                           + std::to_string(d.device.device_type)
                           + "; only cpu tensors (type 1) are read");
  const dtype t = dtype_of_dl(d.dtype);
  const auto size = static_cast<py::ssize_t>(size_of(t));
  // Its elements as a NumPy array of the same bytes, then C-contiguous (a copy only if strided).
  std::vector<py::ssize_t> dims(d.shape, d.shape + d.ndim), strides(dims.size());
  py::ssize_t step = size;
  for (std::size_t i = dims.size(); i-- > 0;) {
    strides[i] = d.strides ? static_cast<py::ssize_t>(d.strides[i]) * size : step;
    step *= dims[i];
  }
  const py::dtype holder = raw_numpy_dtype(t);
  py::array view(holder, dims, strides, static_cast<const char*>(d.data) + d.byte_offset,
                 py::none());
  py::array values = py::module_::import("numpy")
                       .attr("ascontiguousarray")(view)
                       .cast<py::array>();
  shape_t shape(d.shape, d.shape + d.ndim);
  return make(shape, t, values.data(), static_cast<std::size_t>(values.nbytes()), where);
}

void bind_dlpack(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<tensor>>(m.attr("Tensor"));
  cls.def(
       "__dlpack__",
       [](const tensor& t, const py::object& stream) { return export_dlpack(t, stream); },
       py::arg("stream") = py::none(),
       R"(A DLPack capsule of the tensor's bytes, without a copy (read them only): a cpu tensor's
in the store; a device tensor's where its device holds them, in thread mode (ag.Error in process
mode: a child's memory is not this process's). On a CUDA device, `stream` (the consumer's
cudaStream_t as an int; None: the legacy default stream; -1: none) waits for the tensor's writer.
The memory stays while the consumer holds it, even past the runtime's end.)")
    .def(
      "__dlpack_device__",
      [](const tensor& t) {
        const auto [type, id] = dl_device_of(t);
        return py::make_tuple(type, id);
      },
      "(2, ordinal) for a CUDA tensor (kDLCUDA); (1, 0) (kDLCPU) for cpu and sim tensors.");
}

} // namespace ag::python
