// The _actorgraph extension module, which the actorgraph package re-exports: the C++ API of
// include/actorgraph/ with Python's conventions, and no logic of its own.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "convert.hpp"

namespace ag::python {

void bind_basics(py::module_& m) {
  py::register_exception<error>(m, "Error", PyExc_RuntimeError)
    .doc() = "A failure of the runtime, with the C++ library's message (a RuntimeError).";
  // A wait cut short by a signal raises what the signal's handler raised (KeyboardInterrupt).
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const interrupted& e) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    }
  });
  py::enum_<dtype> d(m, "dtype", "What a tensor holds.");
  for (dtype t : {dtype::float32, dtype::float16, dtype::bfloat16, dtype::int32, dtype::int64,
                  dtype::uint8}) {
    d.value(to_string(t), t);
    m.attr(to_string(t)) = t;
  }
  // Replacing the enum's own (a def would add an overload behind them).
  d.attr("__str__") =
    py::cpp_function([](dtype t) { return std::string{to_string(t)}; }, py::is_method(d));
  d.attr("__repr__") =
    py::cpp_function([](dtype t) { return "ag." + std::string{to_string(t)}; }, py::is_method(d));
  d.def_property_readonly(
     "itemsize", [](dtype t) { return size_of(t); }, "Bytes of one element.")
    .def_property_readonly(
      "is_floating_point", [](dtype t) { return is_floating(t); },
      "True for float32, float16 and bfloat16.");
  m.def(
    "parse_devices",
    [](const std::string& text) {
      std::vector<std::string> out;
      for (const auto& dv : parse_devices(text))
        out.push_back(dv.str());
      return out;
    },
    py::arg("text"),
    "The devices of \"sim:0,sim:1\" or \"cuda:0,n1/cuda:0\" by name; [] for \"auto\".");
  m.def("install_stop_signals", &install_stop_signals,
        "SIGINT, SIGTERM, SIGHUP and SIGQUIT kill every runtime's children and remove their shared "
        "memory, then do what they did before (Python's own SIGINT handler: KeyboardInterrupt).");
}

} // namespace ag::python

PYBIND11_MODULE(_actorgraph, m) {
  m.doc() = "actorgraph's C++ runtime; import it as the actorgraph package.";
  ag::python::bind_basics(m);
  ag::python::bind_tensor(m);
  ag::python::bind_dlpack(m);
  ag::python::bind_runtime(m);
  ag::python::bind_ops(m);
  ag::python::bind_reference(m);
}
