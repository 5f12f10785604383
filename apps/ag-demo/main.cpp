// ag-demo: c = a + b on every device, then a two-layer MLP forward pass on every device, each
// checked against a plain C++ reference computed here, with the time each took.
//
//   ag-demo [--devices=auto|cpu|cuda:N|sim:N,...] [--mode=thread|process] [--help]
//
// Options are CAF's own config options, so CAF's (scheduler.*, logger.*) work here too.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/config_option_adder.hpp>

#include <actorgraph/actorgraph.hpp>

namespace {

class demo_config : public caf::actor_system_config {
public:
  std::string devices = "auto";
  std::string mode = "thread";
  int64_t size = 4096;

  demo_config() {
    opt_group{custom_options_, "global"}
      .add(devices, "devices,d", "devices to run on: auto, or a list such as sim:0,sim:1 or cuda:0")
      .add(mode, "mode,m", "thread (one stream actor per device) or process (a child per device)")
      .add(size, "size,s", "elements of the vectors added on each device");
  }
};

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(rng);
  return v;
}

// Plain row-major product, the reference for the MLP.
std::vector<float> reference_matmul(const std::vector<float>& a, const std::vector<float>& b,
                                    std::size_t m, std::size_t k, std::size_t n, bool relu) {
  std::vector<float> out(m * n);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::size_t p = 0; p < k; ++p)
        acc += double(a[i * k + p]) * b[p * n + j];
      out[i * n + j] = relu && acc < 0 ? 0.0f : float(acc);
    }
  return out;
}

// Largest |x - ref| / max(1, |ref|).
double max_rel_error(const std::vector<float>& x, const std::vector<float>& ref) {
  if (x.size() != ref.size())
    return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    worst = std::max(worst, std::abs(double(x[i]) - ref[i]) / std::max(1.0, std::abs(double(ref[i]))));
  return worst;
}

bool run(caf::actor_system& sys, const demo_config& cfg, bool process) {
  ag::graph_option opt;
  opt.devices = ag::parse_devices(cfg.devices);
  opt.per_device_per_process = process;
  const auto t_start = clock_type::now();
  ag::runtime rt{sys, opt};
  std::printf("mode %s, devices cpu,%s: ready in %.1f ms\n", process ? "process" : "thread",
              ag::to_string(rt.devices()).c_str(), ms_since(t_start));

  std::vector<ag::device> all{ag::device::cpu()};
  all.insert(all.end(), rt.devices().begin(), rt.devices().end());
  std::mt19937 rng{42};
  bool ok = true;

  // c = a + b on every device.
  const auto n = static_cast<std::size_t>(cfg.size);
  const auto av = random_vector(n, rng, -1, 1);
  const auto bv = random_vector(n, rng, -1, 1);
  std::vector<float> ref(n);
  for (std::size_t i = 0; i < n; ++i)
    ref[i] = av[i] + bv[i];
  for (const auto& d : all) {
    const auto t0 = clock_type::now();
    auto a = rt.from_vector({cfg.size}, av, d);
    auto b = rt.from_vector({cfg.size}, bv, d);
    auto c = a + b;
    const auto v = c.to_vector();
    const double err = max_rel_error(v, ref);
    const bool good = err == 0.0;
    ok = ok && good;
    std::printf("  %-8s c = a + b   [%zu]   c[0] = %+.6f   max error %.1e   %7.2f ms   %s\n",
                d.str().c_str(), n, v.empty() ? 0.0 : v[0], err, ms_since(t0),
                good ? "ok" : "MISMATCH");
  }

  // A two-layer MLP forward pass: y = relu(x W1) W2.
  const std::size_t batch = 64, in = 256, hidden = 512, out = 10;
  const auto xv = random_vector(batch * in, rng, -1, 1);
  const auto w1v = random_vector(in * hidden, rng, -0.1f, 0.1f);
  const auto w2v = random_vector(hidden * out, rng, -0.1f, 0.1f);
  const auto href = reference_matmul(xv, w1v, batch, in, hidden, true);
  const auto yref = reference_matmul(href, w2v, batch, hidden, out, false);
  const auto i64 = [](std::size_t x) { return static_cast<int64_t>(x); };
  for (const auto& d : all) {
    const auto t0 = clock_type::now();
    auto x = rt.from_vector({i64(batch), i64(in)}, xv, d);
    auto w1 = rt.from_vector({i64(in), i64(hidden)}, w1v, d);
    auto w2 = rt.from_vector({i64(hidden), i64(out)}, w2v, d);
    auto y = x.matmul(w1).relu().matmul(w2);
    const auto v = y.to(ag::device::cpu()).to_vector();
    const double err = max_rel_error(v, yref);
    const bool good = err < 1e-4;
    ok = ok && good;
    std::printf("  %-8s MLP %zux%zu -> %zu -> %zu   y[0] = %+.6f   max error %.1e   %7.2f ms   %s\n",
                d.str().c_str(), batch, in, hidden, out, v.empty() ? 0.0 : v[0], err,
                ms_since(t0), good ? "ok" : "MISMATCH");
  }
  rt.sync();
  const auto stats = rt.stats();
  std::printf("  %zu operators in %zu batches; store bytes still held: %zu\n", stats.operators,
              stats.batches, stats.store_live_bytes);
  return ok;
}

} // namespace

int main(int argc, char** argv) {
  demo_config cfg;
  if (auto err = cfg.parse(argc, argv)) {
    std::cerr << "ag-demo: " << caf::to_string(err) << "\n";
    return 2;
  }
  if (cfg.cli_helptext_printed)
    return 0;
  if (cfg.mode != "thread" && cfg.mode != "process") {
    std::cerr << "ag-demo: --mode=" << cfg.mode << ": expected thread or process\n";
    return 2;
  }
  try {
    caf::actor_system sys{cfg};
    const bool ok = run(sys, cfg, cfg.mode == "process");
    std::printf("%s\n", ok ? "all results match the reference" : "RESULTS DIFFER FROM THE REFERENCE");
    return ok ? 0 : 1;
  } catch (const ag::error& e) {
    std::cerr << "ag-demo: " << e.what() << "\n";
    return 2;
  }
}
