// The free functions of actorgraph/ops.hpp and collectives.hpp, under PyTorch's names; each runs
// without the GIL (an operator may wait for room on its device).
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings.hpp"
#include "convert.hpp"

namespace ag::python {

namespace {

using unlocked = py::call_guard<waiting>;

void bind_unary(py::module_& m, const char* name, tensor (*f)(const tensor&), const char* doc) {
  m.def(name, f, py::arg("x"), unlocked(), doc);
}

void bind_binary(py::module_& m, const char* name, tensor (*f)(const tensor&, const tensor&),
                 const char* doc) {
  m.def(name, f, py::arg("x"), py::arg("y"), unlocked(), doc);
}

} // namespace

void bind_ops(py::module_& m) {
  using binary = tensor (*)(const tensor&, const tensor&);
  using with_scalar = tensor (*)(const tensor&, double);
  m.def("add", static_cast<binary>(&operator+), py::arg("x"), py::arg("y"), unlocked(),
        "x + y, broadcast.");
  m.def("sub", static_cast<binary>(&operator-), py::arg("x"), py::arg("y"), unlocked(),
        "x - y, broadcast.");
  m.def("mul", static_cast<binary>(&operator*), py::arg("x"), py::arg("y"), unlocked(),
        "x * y, broadcast.");
  m.def("div", static_cast<binary>(&operator/), py::arg("x"), py::arg("y"), unlocked(),
        "x / y, broadcast (floating dtypes).");
  bind_binary(m, "maximum", &maximum, "Elementwise maximum, NaN when either is; broadcasts.");
  bind_binary(m, "minimum", &minimum, "Elementwise minimum, NaN when either is; broadcasts.");
  m.def("pow", &pow, py::arg("x"), py::arg("exponent"), unlocked(), "x ** exponent (a number).");
  const std::pair<const char*, std::pair<binary, with_scalar>> comparisons[] = {
    {"eq", {&eq, &eq}}, {"ne", {&ne, &ne}}, {"lt", {&lt, &lt}},
    {"le", {&le, &le}}, {"gt", {&gt, &gt}}, {"ge", {&ge, &ge}},
  };
  for (const auto& [name, f] : comparisons) {
    m.def(name, f.first, py::arg("x"), py::arg("y"), unlocked(),
          "A uint8 tensor, 1 where the comparison holds (NaN compares unequal to everything).");
    m.def(name, f.second, py::arg("x"), py::arg("y"), unlocked());
  }
  m.def("where", &where, py::arg("mask"), py::arg("x"), py::arg("y"), unlocked(),
        "x where mask (uint8) is not 0, else y; the three broadcast.");
  m.def("cat", &cat, py::arg("tensors"), py::arg("dim") = 0, unlocked(),
        "The tensors joined along dim (a copy).");
  bind_unary(m, "neg", &neg, "-x");
  bind_unary(m, "abs", &abs, "|x|");
  bind_unary(m, "relu", static_cast<tensor (*)(const tensor&)>(&relu), "max(x, 0)");
  bind_unary(m, "exp", &exp, "e ** x (floating dtypes, computed in float32)");
  bind_unary(m, "log", &log, "The natural logarithm.");
  bind_unary(m, "sqrt", &sqrt, "The square root.");
  bind_unary(m, "rsqrt", &rsqrt, "1 / sqrt(x).");
  bind_unary(m, "tanh", &tanh, "The hyperbolic tangent.");
  bind_unary(m, "sigmoid", &sigmoid, "1 / (1 + e ** -x).");
  bind_unary(m, "silu", &silu, "x * sigmoid(x).");
  m.def("gelu", &gelu, py::arg("x"), py::arg("approximate") = "none", unlocked(),
        "GELU with erf (approximate=\"none\") or its tanh approximation (\"tanh\").");
  m.def("matmul", &matmul, py::arg("x"), py::arg("y"), unlocked(),
        "torch.matmul: 1-D, 2-D and batched with broadcast batch dimensions; float16 and bfloat16 "
        "accumulate in float32; a transposed operand costs no copy.");
  m.def("softmax", &softmax, py::arg("x"), py::arg("dim"), unlocked(),
        "exp(x) / sum(exp(x)) along dim, computed from x - max.");
  m.def("log_softmax", &log_softmax, py::arg("x"), py::arg("dim"), unlocked(),
        "The logarithm of softmax(x, dim).");
  m.def(
    "layer_norm",
    [](const tensor& x, const std::optional<tensor>& weight, const std::optional<tensor>& bias,
       double eps) { return layer_norm(x, weight.value_or(tensor{}), bias.value_or(tensor{}), eps); },
    py::arg("x"), py::arg("weight") = py::none(), py::arg("bias") = py::none(),
    py::arg("eps") = 1e-5, unlocked(),
    "(x - mean) / sqrt(var + eps) * weight + bias over the last dimension.");
  m.def(
    "rms_norm",
    [](const tensor& x, const std::optional<tensor>& weight, double eps) {
      return rms_norm(x, weight.value_or(tensor{}), eps);
    },
    py::arg("x"), py::arg("weight") = py::none(), py::arg("eps") = 1e-6, unlocked(),
    "x / sqrt(mean(x ** 2) + eps) * weight over the last dimension.");
  m.def("embedding", &embedding, py::arg("table"), py::arg("indices"), unlocked(),
        "Rows of table [V, D] picked by indices (int32 or int64): indices.shape + (D,).");
  m.def("cross_entropy", &cross_entropy, py::arg("logits"), py::arg("targets"), unlocked(),
        "The mean over rows of -log_softmax(logits)[row, targets[row]].");

  m.def("all_reduce", &all_reduce, py::arg("parts"), unlocked(),
        "One tensor per device; returns their sum on each device, in the same order.");
  m.def(
    "broadcast",
    [](const tensor& t, const py::object& to) {
      const auto devices = devices_of(to, "to");
      waiting unlocked;
      return broadcast(t, devices);
    },
    py::arg("tensor"), py::arg("to"), "Copies of tensor on each device of `to`.");
  m.def("all_gather", &all_gather, py::arg("parts"), unlocked(),
        "Every part joined along dimension 0, on each part's device.");
  m.def("reduce_scatter", &reduce_scatter, py::arg("parts"), unlocked(),
        "The sum of the parts, split along dimension 0: piece i on part i's device.");
}

} // namespace ag::python
