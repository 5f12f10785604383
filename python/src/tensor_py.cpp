// ag.Tensor: actorgraph/tensor.hpp with Python's conventions (shape as a tuple, dims as ints or
// tuples, NumPy arrays out) and the operators of actorgraph/ops.hpp as Python's operators. Every
// call that may wait (an operator waiting for room, a read) runs without the GIL.
#include <pybind11/stl.h>

#include <string>

#include "bindings.hpp"
#include "convert.hpp"

namespace ag::python {

namespace {

using unlocked = py::call_guard<waiting>;

// The shape of `args` as reshape(2, 3) or reshape((2, 3)) gives it.
shape_t shape_args(const py::args& args, const char* what) {
  if (args.size() == 1 && !py::isinstance<py::int_>(args[0]))
    return dims_of(args[0], what);
  return dims_of(args, what);
}

// t[key] as NumPy and PyTorch read it, for ints and slices of step 1 (None and a missing stop
// included), one per leading dimension: slices of t (views), the ints' dimensions dropped.
tensor indexed(const tensor& t, const py::object& key) {
  const py::tuple keys = py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key)
                                                        : py::make_tuple(key);
  const auto& shape = t.shape();
  if (keys.size() > shape.size())
    throw py::index_error("too many indices for " + t.str() + ": " + shown(key));
  tensor r = t;
  shape_t kept;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const int64_t n = shape[d];
    if (d >= keys.size()) {
      kept.push_back(n);
      continue;
    }
    const py::handle k = keys[d];
    if (py::isinstance<py::int_>(k) && !py::isinstance<py::bool_>(k)) {
      int64_t i = k.cast<int64_t>();
      if (i < -n || i >= n)
        throw py::index_error("index " + std::to_string(i) + " is out of bounds for dimension "
                              + std::to_string(d) + " of " + t.str());
      i = i < 0 ? i + n : i;
      r = r.slice(static_cast<int64_t>(d), i, i + 1);
    } else if (py::isinstance<py::slice>(k)) {
      Py_ssize_t start = 0, stop = 0, step = 0;
      if (PySlice_Unpack(k.ptr(), &start, &stop, &step) < 0)
        throw py::error_already_set();
      const Py_ssize_t length = PySlice_AdjustIndices(n, &start, &stop, step);
      if (step != 1)
        throw py::value_error("a slice's step must be 1 (views take no strides but the "
                              "tensor's), got " + shown(k));
      r = r.slice(static_cast<int64_t>(d), start, start + length);
      kept.push_back(length);
    } else {
      throw py::type_error("a tensor is indexed by ints and slices, got " + shown(k));
    }
  }
  return r.reshape(kept);
}

// A single element's value, for item(), float(), int() and bool().
py::object item(const tensor& t) {
  if (t.numel() != 1)
    throw py::value_error("only a tensor of one element converts to a Python scalar, not "
                          + t.str());
  return array_of(t, false).attr("reshape")(py::tuple()).attr("item")();
}

// t.max or t.argmax along dim, or of every element (dim None) as torch.max() gives it.
tensor along(const tensor& t, const py::object& dim, bool keepdim, bool arg) {
  const auto d = dim.is_none() ? int64_t{0} : dim.cast<int64_t>();
  waiting unlocked;
  if (!dim.is_none())
    return arg ? t.argmax(d, keepdim) : t.max(d, keepdim);
  const tensor flat = t.reshape({-1});
  tensor r = arg ? flat.argmax(0) : flat.max(0);
  return keepdim ? r.reshape(shape_t(t.shape().size(), 1)) : r;
}

// t.sum or t.mean over dims (an int, a sequence, or None for every dimension).
tensor over(const tensor& t, const py::object& dim, bool keepdim,
            tensor (tensor::*reduce)(const std::vector<int64_t>&, bool) const) {
  const auto dims = dims_of(dim, "dim");
  waiting unlocked;
  return (t.*reduce)(dims, keepdim);
}

} // namespace

void bind_tensor(py::module_& m) {
  py::class_<tensor> c(m, "Tensor", R"(The result of an operator, on one device of one runtime.

Operators are checked and submitted when called; reading (numpy(), item(), tolist()) waits for
the value. Views (reshape, transpose, permute, slice) always show the values their base had when
they were taken: tensors are never written after they are made.)");
  c.def_property_readonly(
     "shape",
     [](const tensor& t) {
       py::tuple out(t.shape().size());
       for (std::size_t i = 0; i < t.shape().size(); ++i)
         out[i] = t.shape()[i];
       return out;
     },
     "The dimensions, as a tuple.")
    .def_property_readonly("dtype", &tensor::dtype, "What it holds (an ag.dtype).")
    .def_property_readonly(
      "device", [](const tensor& t) { return t.device().str(); }, "Its device's name.")
    .def_property_readonly("ndim", &tensor::dim, "Dimensions (0 for a scalar).")
    .def("dim", &tensor::dim, "Dimensions (0 for a scalar).")
    .def("numel", &tensor::numel, "Elements.")
    .def_property_readonly("is_contiguous", &tensor::is_contiguous,
                           "False for a view whose elements do not lie row-major from its first.")
    .def("__len__",
         [](const tensor& t) {
           if (t.dim() == 0)
             throw py::type_error("len() of a 0-d tensor");
           return t.shape()[0];
         })
    .def("numpy", &array_of, py::arg("raw") = false,
         "The values as a NumPy array (waiting for them): bfloat16 as float32, or as its uint16 "
         "bits with raw=True.")
    .def(
      "__array__",
      [](const tensor& t, const py::object& type, const py::object&) {
        py::array a = array_of(t, false);
        return type.is_none() ? a : py::array(a.attr("astype")(type));
      },
      py::arg("dtype") = py::none(), py::arg("copy") = py::none())
    .def("item", &item, "The value of a one-element tensor as a Python number.")
    .def(
      "tolist", [](const tensor& t) { return array_of(t, false).attr("tolist")(); },
      "The values as nested Python lists.")
    .def("__float__", [](const tensor& t) { return item(t).cast<double>(); })
    .def("__int__", [](const tensor& t) { return py::int_(item(t)); })
    .def("__bool__", [](const tensor& t) { return py::bool_(item(t)); })
    .def(
      "to",
      [](const tensor& t, const py::object& target) {
        const auto where = device_of(target, "device");
        waiting unlocked;
        return t.to(where);
      },
      py::arg("device"), "The tensor on another device (the same tensor when already there).")
    .def(
      "astype",
      [](const tensor& t, const py::object& type) {
        const auto to = dtype_of(type, "dtype");
        waiting unlocked;
        return t.astype(to);
      },
      py::arg("dtype"),
      "The values converted: floating to integer rounds toward zero, saturates, and makes NaN 0.")
    .def("contiguous", &tensor::contiguous, unlocked(),
         "A tensor of its own, contiguous (the same tensor when it already is).")
    .def(
      "reshape",
      [](const tensor& t, const py::args& args) {
        const auto shape = shape_args(args, "reshape");
        waiting unlocked;
        return t.reshape(shape);
      },
      "The same elements in another shape (one dimension may be -1): a view where it can be.")
    .def("transpose", &tensor::transpose, py::arg("dim0"), py::arg("dim1"), unlocked(),
         "A view with dimensions dim0 and dim1 swapped.")
    .def(
      "permute",
      [](const tensor& t, const py::args& args) {
        const auto dims = shape_args(args, "permute");
        waiting unlocked;
        return t.permute(dims);
      },
      "A view whose dimension i is dimension dims[i] of this one.")
    .def("slice", &tensor::slice, py::arg("dim"), py::arg("start"), py::arg("end"), unlocked(),
         "Elements [start, end) of dim, as Python slices them: a view.")
    .def(
      "__getitem__",
      [](const tensor& t, const py::object& key) {
        return indexed(t, key); // views: they do not wait
      },
      "t[i], t[a:b], t[i, a:b, ...]: ints and slices of step 1 per leading dimension, as views "
      "(an int's dimension dropped).")
    .def_property_readonly(
      "T",
      [](const tensor& t) {
        if (t.dim() != 2)
          throw py::value_error(".T is the transpose of a 2-D tensor, not of " + t.str());
        return t.transpose(0, 1);
      },
      "The transpose of a 2-D tensor (a view).")
    .def("matmul", &tensor::matmul, unlocked(), "ag.matmul(self, other).")
    .def("relu", py::overload_cast<>(&tensor::relu, py::const_), unlocked(), "max(x, 0).")
    .def(
      "sum",
      [](const tensor& t, const py::object& dim, bool keepdim) {
        return over(t, dim, keepdim, &tensor::sum);
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false,
      "The sum over dim (an int or a tuple; None: every dimension).")
    .def(
      "mean",
      [](const tensor& t, const py::object& dim, bool keepdim) {
        return over(t, dim, keepdim, &tensor::mean);
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false,
      "The mean over dim (an int or a tuple; None: every dimension).")
    .def(
      "max",
      [](const tensor& t, const py::object& dim, bool keepdim) {
        return along(t, dim, keepdim, false);
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false,
      "The maximum along dim (None: of every element); NaN when any is.")
    .def(
      "argmax",
      [](const tensor& t, const py::object& dim, bool keepdim) {
        return along(t, dim, keepdim, true);
      },
      py::arg("dim") = py::none(), py::arg("keepdim") = false,
      "The index (int64) of the first largest element along dim (None: of the flattened tensor).")
    .def("__repr__", &tensor::str)
    .def("__str__", &tensor::str)
    .def("__hash__", [](const py::object& self) { return py::hash(py::int_(
                                                     reinterpret_cast<std::uintptr_t>(self.ptr()))); });

  // Python's operators, a tensor or a number on either side.
  c.def("__add__", [](const tensor& a, const tensor& b) { return a + b; }, py::is_operator(), unlocked())
    .def("__add__", [](const tensor& a, double b) { return a + b; }, py::is_operator(), unlocked())
    .def("__radd__", [](const tensor& a, double b) { return b + a; }, py::is_operator(), unlocked())
    .def("__sub__", [](const tensor& a, const tensor& b) { return a - b; }, py::is_operator(), unlocked())
    .def("__sub__", [](const tensor& a, double b) { return a - b; }, py::is_operator(), unlocked())
    .def("__rsub__", [](const tensor& a, double b) { return b - a; }, py::is_operator(), unlocked())
    .def("__mul__", [](const tensor& a, const tensor& b) { return a * b; }, py::is_operator(), unlocked())
    .def("__mul__", [](const tensor& a, double b) { return a * b; }, py::is_operator(), unlocked())
    .def("__rmul__", [](const tensor& a, double b) { return b * a; }, py::is_operator(), unlocked())
    .def("__truediv__", [](const tensor& a, const tensor& b) { return a / b; }, py::is_operator(), unlocked())
    .def("__truediv__", [](const tensor& a, double b) { return a / b; }, py::is_operator(), unlocked())
    .def("__rtruediv__", [](const tensor& a, double b) { return b / a; }, py::is_operator(), unlocked())
    .def("__matmul__", [](const tensor& a, const tensor& b) { return matmul(a, b); }, py::is_operator(), unlocked())
    .def("__pow__", [](const tensor& a, double e) { return pow(a, e); }, py::is_operator(), unlocked())
    .def("__neg__", [](const tensor& a) { return -a; }, unlocked())
    .def("__abs__", [](const tensor& a) { return abs(a); }, unlocked())
    .def("__eq__", [](const tensor& a, const tensor& b) { return eq(a, b); }, py::is_operator(), unlocked())
    .def("__eq__", [](const tensor& a, double b) { return eq(a, b); }, py::is_operator(), unlocked())
    .def("__ne__", [](const tensor& a, const tensor& b) { return ne(a, b); }, py::is_operator(), unlocked())
    .def("__ne__", [](const tensor& a, double b) { return ne(a, b); }, py::is_operator(), unlocked())
    .def("__lt__", [](const tensor& a, const tensor& b) { return lt(a, b); }, py::is_operator(), unlocked())
    .def("__lt__", [](const tensor& a, double b) { return lt(a, b); }, py::is_operator(), unlocked())
    .def("__le__", [](const tensor& a, const tensor& b) { return le(a, b); }, py::is_operator(), unlocked())
    .def("__le__", [](const tensor& a, double b) { return le(a, b); }, py::is_operator(), unlocked())
    .def("__gt__", [](const tensor& a, const tensor& b) { return gt(a, b); }, py::is_operator(), unlocked())
    .def("__gt__", [](const tensor& a, double b) { return gt(a, b); }, py::is_operator(), unlocked())
    .def("__ge__", [](const tensor& a, const tensor& b) { return ge(a, b); }, py::is_operator(), unlocked())
    .def("__ge__", [](const tensor& a, double b) { return ge(a, b); }, py::is_operator(), unlocked());
}

} // namespace ag::python
