// How Python values become the runtime's (dtypes, devices, shapes, durations) and how tensors'
// values become NumPy arrays: the binding's conversions, shared by its files.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <functional>
#include <string>

#include <actorgraph/actorgraph.hpp>

namespace ag::python {

namespace py = pybind11;

// What a call that may wait holds: the GIL released, and an interrupt scope whose check runs
// Python's signal handlers (Ctrl-C's KeyboardInterrupt) every interrupt_period of a wait, which
// then ends with ag::interrupted and raises what the handler raised.
bool signals_pending(void*);
class waiting {
public:
  waiting() : scope_(&signals_pending, nullptr) {}

private:
  py::gil_scoped_release unlocked_;
  interrupt_scope scope_;
};

// Python's repr of value, for error messages.
inline std::string shown(const py::handle& value) { return py::repr(value).cast<std::string>(); }

// ag.dtype, a dtype's name ("float32", "half", ...), a NumPy dtype or scalar type (np.float32).
// None gives `otherwise`. TypeError or ValueError naming `what` and the value otherwise.
dtype dtype_of(const py::handle& value, const char* what);
// The NumPy dtype that holds t's values: float32 for bfloat16, which NumPy lacks.
py::dtype numpy_dtype(dtype t);
// The NumPy dtype that holds t's bits: uint16 for bfloat16.
py::dtype raw_numpy_dtype(dtype t);

// A device's name ("cuda:0", "n1/sim:1") or None for the cpu.
device device_of(const py::handle& value, const char* what);
// A device list: "sim:0,sim:1", or a sequence of names.
std::vector<device> devices_of(const py::handle& value, const char* what);

// Seconds (a number, float("inf") for no deadline) as milliseconds; ValueError when negative.
std::chrono::milliseconds millis_of(const py::handle& value, const char* what);
std::chrono::microseconds micros_of(const py::handle& value, const char* what);
// A duration as seconds (inf for no deadline).
double seconds_of(std::chrono::milliseconds d);

// An int or a sequence of ints (a dimension list); None gives an empty list.
std::vector<int64_t> dims_of(const py::handle& value, const char* what);

// Makes a tensor of its arguments' bytes, as runtime::from_bytes (the GIL released).
using bytes_maker =
  std::function<tensor(const shape_t&, dtype, const void*, std::size_t, const device&)>;
// A tensor holding `value` (an array, a nested list, a number) on `where`: its dtype is `type`, or
// as NumPy infers it (float64 becomes float32, bool uint8). One copy of a C-contiguous array.
tensor tensor_of(const py::handle& value, const device& where, const py::handle& type,
                 const bytes_maker& make);

// A tensor holding a copy of another library's cpu tensor (any object with __dlpack__), as
// tensor_of does.
tensor tensor_of_dlpack(const py::handle& value, const device& where, const bytes_maker& make);

// t's values as a NumPy array of its shape (bfloat16 as float32, or as its uint16 bits with raw);
// waits without the GIL. A cpu tensor's array is a read-only view of its bytes in the store
// (bfloat16 as float32 excepted), which it keeps; any other is a new array.
py::array array_of(const tensor& t, bool raw);

} // namespace ag::python
