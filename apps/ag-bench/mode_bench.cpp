#include "apps/ag-bench/mode_bench.hpp"
#include "apps/ag-bench/children.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

#include "apps/ag-bench/queue_bench.hpp"
#include "apps/ag-bench/stats.hpp"

namespace ag::bench {

namespace {

using clock_type = std::chrono::steady_clock;

// Constructs a runtime in `rt`.
void start_runtime(std::optional<ag::runtime>& rt, const ag::graph_option& opt) {
  try {
    rt.emplace(opt);
  } catch (const std::exception& e) {
    throw cannot_run(std::string{opt.per_device_per_process ? "process" : "thread"} + " mode: "
                     + e.what());
  }
}

double us_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

// One add on every device per step, `steps` steps, then one sync: microseconds per step, and of
// them the time the user's thread took to submit (until the last add returned).
std::pair<double, double> streamed(ag::runtime& rt, const std::vector<ag::tensor>& a,
                                   const std::vector<ag::tensor>& b, int steps) {
  std::vector<ag::tensor> c(a.size());
  rt.sync();
  const auto t0 = clock_type::now();
  for (int i = 0; i < steps; ++i)
    for (std::size_t d = 0; d < a.size(); ++d)
      c[d] = a[d] + b[d];
  const double submitted = us_since(t0);
  rt.sync();
  return {us_since(t0) / steps, submitted / steps};
}

// `per_sync` adds on the first device, then a sync, until about `total` adds: us per add.
double per_sync(ag::runtime& rt, const ag::tensor& a, const ag::tensor& b, int per_sync_ops,
                int total) {
  const int rounds = std::max(1, total / per_sync_ops);
  ag::tensor c;
  rt.sync();
  const auto t0 = clock_type::now();
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < per_sync_ops; ++i)
      c = a + b;
    rt.sync();
  }
  return us_since(t0) / (double(rounds) * per_sync_ops);
}

// CPU seconds process `pid` has run so far, every thread's (schedstat: nanoseconds on a CPU, finer
// than the clock ticks of /proc/PID/stat); 0 when it is gone.
double cpu_seconds(long pid) {
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  double total = 0;
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator{tasks, ec}) {
    std::ifstream in{t.path() / "schedstat"};
    double ns = 0;
    if (in >> ns)
      total += ns * 1e-9;
  }
  return total;
}

// Percent of one core that this process and its children use over `span` while this thread sleeps
// (nothing submitted: only the runtime's own threads run).
double idle_cpu_percent(std::chrono::milliseconds span) {
  auto total = [] {
    double s = cpu_seconds(::getpid());
    for (const pid_t c : ag::bench::children_of_this_process())
      s += cpu_seconds(c);
    return s;
  };
  const double before = total();
  const auto t0 = clock_type::now();
  std::this_thread::sleep_for(span);
  const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  return (total() - before) / wall * 100;
}

} // namespace

mode_figures measure_mode(const std::vector<ag::device>& devices, bool process,
                          ag::transport transport, std::chrono::microseconds spin,
                          std::chrono::milliseconds progress, const sizes& n, bool sweep,
                          const std::string& timeline, const std::string& name) {
  mode_figures f;
  ag::graph_option opt;
  opt.devices = devices;
  opt.per_device_per_process = process;
  opt.transport = transport;
  opt.spin_wait = spin;
  opt.progress_timeout = progress;
  std::vector<double> startups;
  for (int i = 1; i < n.startups; ++i) {
    const auto t0 = clock_type::now();
    std::optional<ag::runtime> rt;
    start_runtime(rt, opt);
    startups.push_back(us_since(t0) / 1e3);
  }
  if (!timeline.empty())
    opt.timeline_path = timeline + "." + name + ".json";
  auto t0 = clock_type::now();
  std::optional<ag::runtime> started;
  start_runtime(started, opt);
  ag::runtime& rt = *started;
  startups.push_back(us_since(t0) / 1e3);
  f.startup_ms = ag::bench::median(startups);

  const auto dev0 = devices.front();
  std::vector<ag::tensor> a, b;
  for (const auto& d : devices) {
    a.push_back(rt.full({elements}, 1.5f, d));
    b.push_back(rt.full({elements}, 2.5f, d));
  }
  streamed(rt, a, b, std::max(100, n.streamed_ops / 20)); // warm-up: allocator, first launches
  std::tie(f.streamed_us, f.submit_us) = streamed(rt, a, b, n.streamed_ops);

  std::vector<double> trips;
  for (int i = 0; i < n.round_trips + 10; ++i) {
    t0 = clock_type::now();
    const auto v = (a[0] + b[0]).to_vector();
    if (i >= 10) // the first ones warm up the copy path
      trips.push_back(us_since(t0));
    if (v.size() != std::size_t(elements) || v[0] != 4.0f)
      throw ag::error("round trip: wrong result");
  }
  f.round_trip_us = ag::bench::median(trips);

  {
    const auto count = int64_t(n.h2d_bytes / sizeof(float));
    auto host = rt.from_vector({count}, std::vector<float>(std::size_t(count), 0.5f),
                               ag::device::cpu());
    rt.sync();
    std::vector<double> rates;
    for (int i = 0; i < n.h2d_repeats + 1; ++i) {
      t0 = clock_type::now();
      auto on_device = host.to(dev0);
      rt.sync();
      if (i > 0) // the first pays for first-touch of device memory
        rates.push_back(double(n.h2d_bytes) / (us_since(t0) * 1e3));
    }
    f.h2d_gbps = ag::bench::median(rates);
  }

  {
    // The cpu lane of a sim device multiplies in plain loops: a 4096^2 product there takes
    // seconds, and 20 of them passed the wait_timeout. Sim devices multiply at most 512^2.
    const bool gpu = dev0.type == ag::device::kind::cuda;
    const int64_t m = gpu ? n.matmul_n : std::min<int64_t>(n.matmul_n, 512);
    auto x = rt.full({m, m}, 0.5f, dev0);
    auto y = rt.full({m, m}, 0.25f, dev0);
    auto z = x.matmul(y); // warm-up: loads cuBLAS on a GPU
    rt.sync();
    t0 = clock_type::now();
    for (int i = 0; i < n.matmul_repeats; ++i)
      z = x.matmul(y);
    rt.sync();
    f.matmul_tflops = 2.0 * double(m) * m * m * n.matmul_repeats / (us_since(t0) * 1e-6) * 1e-12;
  }

  rt.sync();
  std::this_thread::sleep_for(std::chrono::milliseconds{200}); // past every spin
  f.idle_cpu_percent = idle_cpu_percent(std::chrono::milliseconds{n.idle_ms});

  {
    const auto q = ag::bench::measure_queued_collectives(opt, n.queued);
    f.queued_ratio = q.collectives_s / q.adds_s;
    f.queued_failure_ratio = q.failure_s / q.adds_s;
  }

  if (sweep)
    for (int k : {1, 4, 16, 64, 256, 1024, 4096})
      f.sweep.emplace_back(k, per_sync(rt, a[0], b[0], k, std::max(k, n.streamed_ops / 4)));
  return f;
}

floor_figures measure_floors(const std::vector<ag::device>& devices, const std::string& self,
                             const sizes& n, bool quick) {
  floor_figures f;
  const auto& d = devices.front();
  if (d.type == ag::device::kind::cuda) {
    f.launch = ag::floors::raw_launch(d.index, n.launches, elements);
    f.h2d_gbps = ag::floors::h2d_registered_gbps(d.index, n.h2d_bytes, n.h2d_repeats);
    f.sgemm_tflops = ag::floors::sgemm_tflops(d.index, n.matmul_n, n.matmul_repeats);
  }
  f.zmq = ag::bench::measure_zmq_floor(self, ag::bench::zmq_path::ipc, quick);
  f.zmq_tcp = ag::bench::measure_zmq_floor(self, ag::bench::zmq_path::tcp, quick);
  f.zmq_tcp_curve = ag::bench::measure_zmq_floor(self, ag::bench::zmq_path::tcp_curve, quick);
  f.shm = ag::bench::measure_shm_floor(quick);
  return f;
}

} // namespace ag::bench
