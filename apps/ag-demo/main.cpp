// ag-demo: c = a + b on every device, then a two-layer MLP forward pass on every device, each
// checked against a plain C++ reference computed here, with the time each took; in thread mode,
// process mode, or both side by side (the default).
//
//   ag-demo [--devices=auto|cpu|cuda:N|sim:N,...] [--mode=thread|process] [--size=N]
//           [--record-trace=FILE] [--timeline=FILE.json] [--config-file=FILE] [--version] [--help]
//
// With both modes, FILE gets the mode before its extension: t.thread, t.process.json.
//
// Options are CAF's own config options, so CAF's (scheduler.*, logger.*) work here too; a
// configuration file is read only when --config-file names one.
// Exit codes (README.md, "Exit codes"): 0 every result matches the reference, 1 a result differs or
// the run failed, 2 a bad command line, 3 the runtime could not start.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <random>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/config_option_adder.hpp>

#include <actorgraph/actorgraph.hpp>

#include "apps/app_config.hpp"

namespace {

// The most elements --size takes: three vectors of it on the cpu fit the default store (1 GiB) with
// room to spare.
constexpr int64_t max_size = int64_t{1} << 24;

class demo_config : public ag::app::config {
public:
  std::string devices = "auto";
  std::string mode; // empty: both, side by side
  int64_t size = 4096;
  std::string record_trace;
  std::string timeline;
  std::string key;
  std::string nodes;

  demo_config() : ag::app::config("ag-demo", true) {
    opt_group{custom_options_, "global"}
      .add(devices, "devices,d", "devices to run on: auto, or a list such as sim:0,sim:1 or cuda:0")
      .add(mode, "mode,m", "thread (a stream actor per device) or process (a child per device); default: both")
      .add(size, "size,s", "elements of the vectors added on each device (1 to 16777216)")
      .add(record_trace, "record-trace", "record every message to the runners into FILE (ag-replay FILE)")
      .add(timeline, "timeline", "write a Chrome trace-event timeline (open it in ui.perfetto.dev)")
      .add(key, "key", "with --nodes: this controller's identity (ag-keygen's NAME.secret)")
      .add(nodes, "nodes", "machines running ag-node, NAME=tcp://HOST:PORT=NAME.public, comma-separated; "
                           "their devices are NAME/cuda:N, NAME/sim:N (process mode)");
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

struct row {
  std::string what;    // "sim:0  c = a + b [4096]"
  double first = 0;    // first element of the result
  double error = 0;    // largest relative error against the reference
  double ms = 0;       // time taken
  bool ok = false;
};

struct mode_result {
  std::string mode;
  double ready_ms = 0;
  std::vector<row> rows;
  std::size_t operators = 0, batches = 0, store_held = 0;
  std::vector<std::string> files; // "trace t.process", written when the runtime ends
};

// path, or with both modes path with the mode before its extension ("t.json" -> "t.process.json").
std::string for_mode(const std::string& path, const demo_config& cfg, const std::string& mode) {
  if (path.empty() || !cfg.mode.empty())
    return path;
  const auto slash = path.rfind('/');
  const auto dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == 0)
    return path + "." + mode;
  return path.substr(0, dot) + "." + mode + path.substr(dot);
}

// A runtime that could not be constructed: the program cannot run here (exit code 3).
struct cannot_start : std::runtime_error {
  using std::runtime_error::runtime_error;
};

mode_result run(caf::actor_system& sys, const demo_config& cfg,
                const std::vector<ag::device>& devices, bool process) {
  ag::graph_option opt;
  opt.devices = devices;
  opt.per_device_per_process = process;
  const std::string mode = process ? "process" : "thread";
  opt.trace_path = for_mode(cfg.record_trace, cfg, mode);
  opt.timeline_path = for_mode(cfg.timeline, cfg, mode);
  mode_result out;
  out.mode = mode;
  const auto t_start = clock_type::now();
  std::optional<ag::runtime> started;
  try {
    opt.nodes = ag::parse_nodes(cfg.nodes);
    opt.key_file = cfg.key;
    if (opt.nodes.empty())
      started.emplace(sys, opt);
    else // a runtime that reaches nodes owns its actor system, which carries its TLS identity
      started.emplace(opt);
  } catch (const std::exception& e) {
    throw cannot_start(mode + " mode: " + e.what());
  }
  ag::runtime& rt = *started;
  out.ready_ms = ms_since(t_start);

  std::vector<ag::device> all{ag::device::cpu()};
  all.insert(all.end(), rt.devices().begin(), rt.devices().end());
  std::mt19937 rng{42};

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
    const auto v = (a + b).to_vector();
    const double err = max_rel_error(v, ref);
    out.rows.push_back({d.str() + "  c = a + b [" + std::to_string(n) + "]",
                        v.empty() ? 0.0 : v[0], err, ms_since(t0), err == 0.0});
  }

  // A two-layer MLP forward pass: y = relu(x W1) W2.
  const std::size_t batch = 64, in = 256, hidden = 512, classes = 10;
  const auto xv = random_vector(batch * in, rng, -1, 1);
  const auto w1v = random_vector(in * hidden, rng, -0.1f, 0.1f);
  const auto w2v = random_vector(hidden * classes, rng, -0.1f, 0.1f);
  const auto href = reference_matmul(xv, w1v, batch, in, hidden, true);
  const auto yref = reference_matmul(href, w2v, batch, hidden, classes, false);
  const auto i64 = [](std::size_t x) { return static_cast<int64_t>(x); };
  for (const auto& d : all) {
    const auto t0 = clock_type::now();
    auto x = rt.from_vector({i64(batch), i64(in)}, xv, d);
    auto w1 = rt.from_vector({i64(in), i64(hidden)}, w1v, d);
    auto w2 = rt.from_vector({i64(hidden), i64(classes)}, w2v, d);
    const auto v = x.matmul(w1).relu().matmul(w2).to(ag::device::cpu()).to_vector();
    const double err = max_rel_error(v, yref);
    out.rows.push_back({d.str() + "  MLP 64x256 -> 512 -> 10", v.empty() ? 0.0 : v[0], err,
                        ms_since(t0), err < 1e-4});
  }
  rt.sync();
  const auto stats = rt.stats();
  out.operators = stats.operators;
  out.batches = stats.batches;
  out.store_held = stats.store_live_bytes;
  for (const auto& [what, path] : {std::pair{"trace", opt.trace_path}, {"timeline", opt.timeline_path}})
    if (!path.empty())
      out.files.push_back(std::string{what} + " " + path);
  return out;
}

// One column per mode, side by side.
bool print(const std::vector<mode_result>& results) {
  bool ok = true;
  std::printf("%-34s", "");
  for (const auto& r : results)
    std::printf(" | %-40s", (r.mode + " mode").c_str());
  std::printf("\n%-34s", "ready (runtime constructed)");
  for (const auto& r : results)
    std::printf(" | %9.1f ms %28s", r.ready_ms, "");
  std::printf("\n");
  for (std::size_t i = 0; i < results.front().rows.size(); ++i) {
    std::printf("%-34s", results.front().rows[i].what.c_str());
    for (const auto& r : results) {
      const auto& x = r.rows[i];
      ok = ok && x.ok;
      std::printf(" | %+11.6f err %.1e %8.2f ms %-4s", x.first, x.error, x.ms,
                  x.ok ? "ok" : "DIFF");
    }
    std::printf("\n");
  }
  std::printf("%-34s", "operators / batches / store held");
  for (const auto& r : results)
    std::printf(" | %6zu / %6zu / %6zu B %15s", r.operators, r.batches, r.store_held, "");
  std::printf("\n");
  for (const auto& r : results)
    for (const auto& f : r.files)
      std::printf("%s mode %s\n", r.mode.c_str(), f.c_str());
  if (results.size() == 2)
    for (std::size_t i = 0; i < results[0].rows.size(); ++i)
      if (results[0].rows[i].first != results[1].rows[i].first) {
        std::printf("thread and process mode differ at: %s\n", results[0].rows[i].what.c_str());
        ok = false;
      }
  return ok;
}

int start(int argc, char** argv) {
  demo_config cfg;
  if (auto code = cfg.read(argc, argv))
    return *code;
  if (!cfg.remainder.empty())
    return cfg.usage("unexpected argument \"" + cfg.remainder.front() + "\"");
  if (!cfg.mode.empty() && cfg.mode != "thread" && cfg.mode != "process")
    return cfg.usage("--mode=" + cfg.mode + ": expected thread or process");
  if (cfg.size < 1 || cfg.size > max_size)
    return cfg.usage("--size=" + std::to_string(cfg.size) + ": expected 1 to "
                     + std::to_string(max_size) + " elements");
  std::vector<ag::device> devices;
  try {
    devices = ag::parse_devices(cfg.devices);
  } catch (const std::exception& e) {
    return cfg.usage("--devices=" + cfg.devices + ": " + e.what());
  }
  // Ctrl-C or `kill` while it runs: the children and shared memory go with it.
  ag::install_stop_signals();
  try {
    caf::actor_system sys{cfg};
    std::vector<mode_result> results;
    for (const bool process : {false, true})
      if (cfg.mode.empty() || cfg.mode == (process ? "process" : "thread"))
        results.push_back(run(sys, cfg, devices, process));
    const bool ok = print(results);
    std::printf("%s\n", ok ? "all results match the reference" : "RESULTS DIFFER FROM THE REFERENCE");
    return ok ? ag::app::exit_ok : ag::app::exit_failed;
  } catch (const cannot_start& e) {
    return cfg.fail(ag::app::exit_cannot_run, e.what());
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_failed, e.what());
  }
}

} // namespace

int main(int argc, char** argv) {
  return ag::app::guarded_main("ag-demo", start, argc, argv, ag::app::exit_failed);
}
