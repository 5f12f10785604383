// ag.Runtime: an ag::runtime built from keyword options (every graph_option field by its name,
// durations in seconds), closed by close(), by `with`, when collected, or at interpreter exit.
#include <pybind11/stl.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>

#include "bindings.hpp"
#include "convert.hpp"

namespace ag::python {

namespace {

template <class T>
T number(const py::handle& value, const char* what) {
  if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value))
    throw py::type_error(std::string{what} + " must be an int, got " + shown(value));
  const auto v = value.cast<long long>();
  if (v < 0)
    throw py::value_error(std::string{what} + " must be 0 or more, got " + shown(value));
  return static_cast<T>(v);
}

bool flag(const py::handle& value, const char* what) {
  if (!py::isinstance<py::bool_>(value))
    throw py::type_error(std::string{what} + " must be True or False, got " + shown(value));
  return value.cast<bool>();
}

std::string text(const py::handle& value, const char* what) {
  if (!py::isinstance<py::str>(value))
    throw py::type_error(std::string{what} + " must be a str, got " + shown(value));
  return value.cast<std::string>();
}

// One of two named values: "must be \"a\" or \"b\", got ..." for anything else.
template <class E>
E choice(const py::handle& value, const char* what,
         std::initializer_list<std::pair<const char*, E>> options) {
  const auto t = text(value, what);
  std::string names;
  for (const auto& [name, e] : options) {
    if (t == name)
      return e;
    names += (names.empty() ? "\"" : " or \"") + std::string{name} + "\"";
  }
  throw py::value_error(std::string{what} + " must be " + names + ", got " + shown(value));
}

using setter = std::function<void(graph_option&, const py::handle&)>;

// Every graph_option field by its name.
const std::map<std::string, setter>& setters() {
  static const std::map<std::string, setter> table = {
    {"devices", [](graph_option& o, const py::handle& v) { o.devices = devices_of(v, "devices"); }},
    {"per_device_per_process",
     [](graph_option& o, const py::handle& v) {
       o.per_device_per_process = flag(v, "per_device_per_process");
     }},
    {"peer_transfers",
     [](graph_option& o, const py::handle& v) { o.peer_transfers = flag(v, "peer_transfers"); }},
    {"sim_peers", [](graph_option& o, const py::handle& v) { o.sim_peers = flag(v, "sim_peers"); }},
    {"store_bytes",
     [](graph_option& o, const py::handle& v) {
       o.store_bytes = number<std::size_t>(v, "store_bytes");
     }},
    {"wait_timeout",
     [](graph_option& o, const py::handle& v) { o.wait_timeout = millis_of(v, "wait_timeout"); }},
    {"start_timeout",
     [](graph_option& o, const py::handle& v) { o.start_timeout = millis_of(v, "start_timeout"); }},
    {"max_in_flight_ops",
     [](graph_option& o, const py::handle& v) {
       o.max_in_flight_ops = number<std::size_t>(v, "max_in_flight_ops");
     }},
    {"max_in_flight_bytes",
     [](graph_option& o, const py::handle& v) {
       o.max_in_flight_bytes = number<std::size_t>(v, "max_in_flight_bytes");
     }},
    {"max_queued_bytes",
     [](graph_option& o, const py::handle& v) {
       o.max_queued_bytes = number<std::size_t>(v, "max_queued_bytes");
     }},
    {"progress_timeout",
     [](graph_option& o, const py::handle& v) {
       o.progress_timeout = millis_of(v, "progress_timeout");
     }},
    {"max_restarts",
     [](graph_option& o, const py::handle& v) {
       o.max_restarts = number<uint32_t>(v, "max_restarts");
     }},
    {"transport",
     [](graph_option& o, const py::handle& v) {
       o.transport = choice<transport>(
         v, "transport", {{"shared_memory", transport::shared_memory}, {"sockets", transport::sockets}});
     }},
    {"spin_wait",
     [](graph_option& o, const py::handle& v) { o.spin_wait = micros_of(v, "spin_wait"); }},
    {"ring_bytes",
     [](graph_option& o, const py::handle& v) {
       o.ring_bytes = number<std::size_t>(v, "ring_bytes");
     }},
    {"cuda_graphs",
     [](graph_option& o, const py::handle& v) {
       o.cuda_graphs = choice<cuda_graphs>(
         v, "cuda_graphs", {{"auto", cuda_graphs::automatic}, {"off", cuda_graphs::off}});
     }},
    {"max_cuda_graphs",
     [](graph_option& o, const py::handle& v) {
       o.max_cuda_graphs = number<std::size_t>(v, "max_cuda_graphs");
     }},
    {"cuda_graph_after",
     [](graph_option& o, const py::handle& v) {
       const auto n = number<uint64_t>(v, "cuda_graph_after");
       if (n > UINT32_MAX)
         throw py::value_error("cuda_graph_after must be at most 2**32 - 1, got " + shown(v));
       o.cuda_graph_after = static_cast<unsigned>(n);
     }},
    {"nodes",
     [](graph_option& o, const py::handle& v) {
       try {
         o.nodes = parse_nodes(text(v, "nodes"));
       } catch (const error& e) {
         throw py::value_error(std::string{"nodes: "} + e.what());
       }
     }},
    {"key_file", [](graph_option& o, const py::handle& v) { o.key_file = text(v, "key_file"); }},
    {"node_timeout",
     [](graph_option& o, const py::handle& v) { o.node_timeout = millis_of(v, "node_timeout"); }},
    {"node_streams",
     [](graph_option& o, const py::handle& v) {
       o.node_streams = number<std::size_t>(v, "node_streams");
     }},
    {"runner_path",
     [](graph_option& o, const py::handle& v) { o.runner_path = text(v, "runner_path"); }},
    {"trace_path",
     [](graph_option& o, const py::handle& v) { o.trace_path = text(v, "trace_path"); }},
    {"timeline_path",
     [](graph_option& o, const py::handle& v) { o.timeline_path = text(v, "timeline_path"); }},
  };
  return table;
}

std::vector<int64_t> shape_of(const py::handle& value) {
  if (py::isinstance<py::int_>(value))
    return {value.cast<int64_t>()};
  return dims_of(value, "shape");
}

// The Python object behind ag.Runtime: the runtime until it is closed. Calls run without the GIL,
// under a shared lock that close() takes alone, so that a runtime is never destroyed while
// another thread is inside one of its members (runtime.hpp). Every live one is closed at
// interpreter exit, before the module's state goes.
class py_runtime {
public:
  explicit py_runtime(graph_option opt) {
    py::gil_scoped_release unlocked;
    rt_ = std::make_unique<runtime>(std::move(opt));
    std::lock_guard<std::mutex> lock{live_mutex()};
    live().insert(this);
  }
  ~py_runtime() {
    {
      std::lock_guard<std::mutex> lock{live_mutex()};
      live().erase(this);
    }
    if (Py_IsInitialized() && PyGILState_Check())
      close();
    else
      rt_.reset();
  }

  // f(runtime&) without the GIL; ag.Error once closed.
  template <class F>
  auto with(F f) {
    waiting unlocked;
    std::shared_lock<std::shared_mutex> lock{mutex_};
    if (!rt_)
      throw error("this Runtime is closed");
    return f(*rt_);
  }
  // runtime::uniform or runtime::normal of Python's arguments.
  using random_fill = tensor (runtime::*)(const shape_t&, double, double, uint64_t, const device&,
                                          dtype);
  tensor random(random_fill fill, const py::object& shape, double a, double b, uint64_t seed,
                const py::object& device, const py::object& type) {
    const auto where = device_of(device, "device");
    const auto t = type.is_none() ? dtype::float32 : dtype_of(type, "dtype");
    const auto dims = shape_of(shape);
    return with([&](runtime& rt) { return (rt.*fill)(dims, a, b, seed, where, t); });
  }

  // runtime::from_bytes, for tensor_of.
  bytes_maker maker() {
    return [this](const shape_t& shape, dtype t, const void* data, std::size_t n,
                  const device& where) {
      return with([&](runtime& rt) { return rt.from_bytes(shape, t, data, n, where); });
    };
  }
  bool closed() {
    std::shared_lock<std::shared_mutex> lock{mutex_};
    return rt_ == nullptr;
  }

  // Waits for the calls in progress, then stops the runners (waiting up to wait_timeout for
  // submitted work), without the GIL.
  void close() {
    py::gil_scoped_release unlocked;
    std::unique_lock<std::shared_mutex> lock{mutex_};
    rt_.reset();
  }

  static void close_all() {
    std::set<py_runtime*> all;
    {
      std::lock_guard<std::mutex> lock{live_mutex()};
      all = live();
    }
    for (auto* r : all)
      r->close();
  }

private:
  static std::mutex& live_mutex() {
    static std::mutex m;
    return m;
  }
  static std::set<py_runtime*>& live() {
    static std::set<py_runtime*> s;
    return s;
  }

  std::shared_mutex mutex_;
  std::unique_ptr<runtime> rt_;
};

py::dict stats_of(const runtime_stats& s) {
  py::dict d;
  d["store_live_bytes"] = s.store_live_bytes;
  d["device_live_bytes"] = s.device_live_bytes;
  d["batches"] = s.batches;
  d["operators"] = s.operators;
  d["in_flight_ops"] = s.in_flight_ops;
  d["blocked_submits"] = s.blocked_submits;
  d["restarts"] = s.restarts;
  return d;
}


} // namespace

void bind_runtime(py::module_& m) {
  py::class_<py_runtime>(m, "Runtime", R"(One controller driving several devices.

Runtime(devices="auto", per_device_per_process=False, **options) takes every graph_option field
by its name (durations in seconds, float("inf") for no deadline): peer_transfers, sim_peers,
store_bytes, wait_timeout, start_timeout, max_in_flight_ops, max_in_flight_bytes,
max_queued_bytes, progress_timeout, max_restarts, transport ("shared_memory" or "sockets"), spin_wait,
ring_bytes, cuda_graphs ("auto" or "off"), max_cuda_graphs, cuda_graph_after, nodes, key_file,
node_timeout, node_streams, runner_path, trace_path, timeline_path.
Every runner is ready when it returns. Use it in a `with` block, or close() it.)")
    .def(py::init([](const py::object& devices, const py::object& per_device_per_process,
                     const py::kwargs& options) {
           graph_option opt;
           const auto& table = setters();
           table.at("devices")(opt, devices);
           table.at("per_device_per_process")(opt, per_device_per_process);
           for (const auto& [key, value] : options) {
             const auto name = key.cast<std::string>();
             auto it = table.find(name);
             if (it == table.end() || name == "devices" || name == "per_device_per_process")
               throw py::type_error("Runtime() got an unexpected keyword argument '" + name + "'");
             it->second(opt, value);
           }
           return std::make_unique<py_runtime>(std::move(opt));
         }),
         py::arg("devices") = py::str("auto"), py::arg("per_device_per_process") = false)
    .def("close", &py_runtime::close,
         "Waits (up to wait_timeout) for submitted work, stops every runner and releases the "
         "store. Tensors of a closed runtime raise ag.Error when used. Closing twice does nothing.")
    .def_property_readonly("closed", &py_runtime::closed, "True once close() ran.")
    .def_property_readonly(
      "per_device_per_process",
      [](py_runtime& r) {
        return r.with([](runtime& rt) { return rt.option().per_device_per_process; });
      },
      "True when each device runs in a child process of its own (process mode).")
    .def("__enter__", [](py::object self) { return self; })
    .def("__exit__", [](py_runtime& r, const py::args&) { r.close(); })
    .def(
      "sync",
      [](py_runtime& r) { r.with([](runtime& rt) { rt.sync(); }); },
      "Waits until every operator submitted so far has run; raises ag.Error naming the device and "
      "the operator when one failed, or when the wait passes wait_timeout.")
    .def(
      "mark_step",
      [](py_runtime& r) { r.with([](runtime& rt) { rt.mark_step(); }); },
      "Ends a step: what was submitted since the last mark runs on each device as one unit, and a "
      "device that runs the same step again launches it as one CUDA graph (cuda_graphs). Mark "
      "each iteration of a training or decoding loop; nothing else in the loop changes.")
    .def(
      "stats", [](py_runtime& r) { return stats_of(r.with([](runtime& rt) { return rt.stats(); })); },
      "store_live_bytes, device_live_bytes, batches, operators, in_flight_ops, blocked_submits, "
      "restarts.")
    .def_property_readonly(
      "devices",
      [](py_runtime& r) {
        return r.with([](runtime& rt) {
          std::vector<std::string> out;
          for (const auto& d : rt.devices())
            out.push_back(d.str());
          return out;
        });
      },
      "The devices besides cpu, with \"auto\" resolved.")
    .def(
      "tensor",
      [](py_runtime& r, const py::object& value, const py::object& device, const py::object& type) {
        return tensor_of(value, device_of(device, "device"), type, r.maker());
      },
      py::arg("value"), py::arg("device") = py::none(), py::arg("dtype") = py::none(),
      "A tensor holding value (a NumPy array, a nested list or a number) on device (None: cpu). "
      "Its dtype is dtype, or as NumPy infers it: float64 becomes float32, bool uint8.")
    .def(
      "from_dlpack",
      [](py_runtime& r, const py::object& value, const py::object& device) {
        return tensor_of_dlpack(value, device_of(device, "device"), r.maker());
      },
      py::arg("value"), py::arg("device") = py::none(),
      "A copy of another library's cpu tensor (NumPy, PyTorch: anything with __dlpack__) on "
      "device (None: cpu).")
    .def(
      "full",
      [](py_runtime& r, const py::object& shape, double value, const py::object& device,
         const py::object& type) {
        const auto where = device_of(device, "device");
        const auto t = type.is_none() ? dtype::float32 : dtype_of(type, "dtype");
        const auto dims = shape_of(shape);
        return r.with([&](runtime& rt) { return rt.full(dims, value, where, t); });
      },
      py::arg("shape"), py::arg("value"), py::arg("device") = py::none(),
      py::arg("dtype") = py::none(), "A tensor of shape with every element value.")
    .def(
      "uniform",
      [](py_runtime& r, const py::object& shape, double low, double high, uint64_t seed,
         const py::object& device, const py::object& type) {
        return r.random(&runtime::uniform, shape, low, high, seed, device, type);
      },
      py::arg("shape"), py::arg("low") = 0.0, py::arg("high") = 1.0, py::arg("seed") = 0,
      py::arg("device") = py::none(), py::arg("dtype") = py::none(),
      "Values uniform in [low, high): draw i of the Philox stream of seed, the same bits on every "
      "device kind and in either mode.")
    .def(
      "normal",
      [](py_runtime& r, const py::object& shape, double mean, double std, uint64_t seed,
         const py::object& device, const py::object& type) {
        return r.random(&runtime::normal, shape, mean, std, seed, device, type);
      },
      py::arg("shape"), py::arg("mean") = 0.0, py::arg("std") = 1.0, py::arg("seed") = 0,
      py::arg("device") = py::none(), py::arg("dtype") = py::none(),
      "Values normal with mean and std, counter-based as uniform.")
    .def("__repr__", [](py_runtime& r) {
      if (r.closed())
        return std::string{"<ag.Runtime closed>"};
      return r.with([](runtime& rt) {
        return "<ag.Runtime on " + to_string(rt.devices())
               + (rt.option().per_device_per_process ? ", process mode>" : ", thread mode>");
      });
    });
  m.def(
    "from_dlpack",
    [](const py::object& value, py_runtime& r, const py::object& device) {
      return tensor_of_dlpack(value, device_of(device, "device"), r.maker());
    },
    py::arg("value"), py::arg("runtime"), py::arg("device") = py::none(),
    "runtime.from_dlpack(value, device): a copy of another library's cpu tensor.");
  // Runtimes still open at exit stop their children and remove their shared memory before the
  // interpreter's state goes.
  py::module_::import("atexit").attr("register")(py::cpp_function([] { py_runtime::close_all(); }));
}

} // namespace ag::python
