// _actorgraph._reference: the C++ side of apps/python/bench_binding.py, timed in the caller's own
// runtime so that the binding's cost is told apart from the runtime's state (a process-mode
// runtime's read latency settles at levels that differ from one runtime to the next).
#include <chrono>

#include <actorgraph/ops.hpp>
#include <actorgraph/tensor.hpp>

#include "bindings.hpp"

namespace ag::python {

void bind_reference(py::module_& m) {
  auto r = m.def_submodule("_reference", "The C++ calls bench_binding compares Python against.");
  r.def(
    "round_trip",
    [](const tensor& a, const tensor& b) {
      py::gil_scoped_release unlocked;
      const auto t0 = std::chrono::steady_clock::now();
      const auto values = (a + b).to_vector();
      const auto t1 = std::chrono::steady_clock::now();
      (void)values;
      return std::chrono::duration<double, std::micro>(t1 - t0).count();
    },
    py::arg("a"), py::arg("b"),
    "Microseconds of (a + b).to_vector() from C++ (ag-bench's read round trip), the GIL released.");
}

} // namespace ag::python
