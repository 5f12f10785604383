// The parts of the _actorgraph module, each binding one public header's worth of the C++ API.
#pragma once

#include <pybind11/pybind11.h>

namespace ag::python {

namespace py = pybind11;

// ag.dtype and its values, ag.Error, parse_devices, install_stop_signals.
void bind_basics(py::module_& m);
// ag.Runtime (actorgraph/runtime.hpp, graph_option.hpp).
void bind_runtime(py::module_& m);
// ag.Tensor (actorgraph/tensor.hpp) and its operators.
void bind_tensor(py::module_& m);
// DLPack: Tensor.__dlpack__ and __dlpack_device__ (after bind_tensor).
void bind_dlpack(py::module_& m);
// The free functions of actorgraph/ops.hpp and collectives.hpp.
void bind_ops(py::module_& m);
// _reference: the C++ calls apps/python/bench_binding.py times beside Python's.
void bind_reference(py::module_& m);

} // namespace ag::python
