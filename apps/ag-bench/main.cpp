// ag-bench: actorgraph against its hardware floors, measured in one run (docs/BENCHMARKS.md).
//
//   ag-bench [--devices=cuda:0|sim:0|cuda:0,cuda:1,...]
//            [--mode=thread|process|both|node|peers|all|ops|steps]
//            [--transport=shared_memory|sockets|both] [--spin-us=US] [--quick] [--sweep]
//            [--progress-timeout-ms=MS]
//            [--json=FILE]
//            [--timeline=FILE] [--config-file=FILE] [--version] [--help]
//
// Floors: back-to-back launches of the elementwise add on a raw CUDA stream, and one launch with
// its synchronize; raw cppzmq round trips, one-way streams of small messages and of 4 MiB pieces
// between two processes (the socket pattern of process mode), over ipc://, TCP loopback and TCP
// loopback with CURVE; a shared-memory ping-pong between two processes (spinning, on a futex, and
// spinning then sleeping as the runtime's waits do); host-to-device copies from registered
// memory; cuBLAS SGEMM.
// actorgraph, in each mode: streamed per-operator time (an add of 4096 floats per call on every
// device, then one sync), the sync round trip ((a + b).to_vector()), start-up to ready,
// host-to-device bandwidth of a cpu tensor's .to(device), matmul TFLOP/s, and the CPU the runtime
// (controller and children) takes while idle. Each mode runs on the shared-memory path and on the
// sockets alone (graph_option::transport). Every figure is printed with its ratio to its floor. On
// sim devices the CUDA floors are n/a.
// --mode=node (or all, with thread and process) measures a node instead (docs/NODES.md): an
// ag-node on 127.0.0.1 started beside ag-bench with identities made by the ag-keygen beside it,
// lending the first --devices entry (n1/sim:0 for sim:0); its sync and read round trips against
// the TCP+CURVE round-trip floor, its upload and download bandwidth against the TCP bulk floors.
// The node's children always run on the sockets path: --transport does not apply to it.
// --mode=peers (or all, with two devices or more) measures direct transfers between the devices
// in thread mode (apps/ag-bench/peer_bench.hpp): a move devices[0] -> devices[1] and all_reduce
// over every device from 4 KiB to 256 MiB per part, on the direct path (graph_option::
// peer_transfers) and on the store path side by side, against cudaMemcpyPeerAsync at each size and
// the launch-and-sync floor. Devices: all cuda (AG_CUDA_ORDINALS=0,0 makes cuda:0,cuda:1 two lanes
// of one GPU) or all sim (graph_option::sim_peers; floors n/a). Alone, it measures no other floor.
// --mode=steps measures steps (runtime::mark_step) with graph_option::cuda_graphs off and on on
// the first device, in both modes (apps/ag-bench/steps_bench.hpp): K adds per step against the raw
// launch and one CUDA graph of K adds launched directly, and ag-train's step.
// --sweep adds per-operator time against the number of operators per sync (the plot in
// docs/BENCHMARKS.md); --quick makes a run of well under a minute on sim devices.
// Exit codes (README.md, "Exit codes"): 0 measured, 1 a measurement failed or gave a wrong result,
// 2 a bad command line, 3 a runtime could not start or --json could not be written.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <caf/actor_system_config.hpp>
#include <caf/config_option_adder.hpp>

#include <actorgraph/actorgraph.hpp>

#include "apps/ag-bench/local_node.hpp"
#include "apps/ag-bench/mode_bench.hpp"
#include "apps/ag-bench/ops_bench.hpp"
#include "apps/ag-bench/node_bench.hpp"
#include "apps/ag-bench/peer_bench.hpp"
#include "apps/ag-bench/stats.hpp"
#include "apps/ag-bench/steps_bench.hpp"
#include "apps/app_config.hpp"
#include "apps/ag-bench/shm_floor.hpp"
#include "apps/ag-bench/zmq_floor.hpp"
#include "cuda/floors.hpp"
#include "cuda/kernel_stream.hpp"

namespace {

class bench_config : public ag::app::config {
public:
  std::string devices;
  std::string mode = "both";
  std::string transport = "both";
  int64_t spin_us = 50;
  int64_t progress_ms = ag::graph_option{}.progress_timeout.count();
  bool quick = false;
  bool sweep = false;
  std::string json;
  std::string timeline;
  std::string zmq_peer; // internal: this program as the peer of the ZMQ floor
  size_t node_streams = ag::graph_option{}.node_streams;
  bool peers_process = false;

  bench_config() : ag::app::config("ag-bench", true) {
    opt_group{custom_options_, "global"}
      .add(devices, "devices,d", "devices (default: cuda:0 when there is a GPU, else sim:0)")
      .add(mode, "mode,m",
           "thread, process, both (thread and process), node (the first device, lent by an "
           "ag-node that ag-bench starts on 127.0.0.1), peers (direct transfers between the "
           "devices, thread mode), ops (the operators of real networks on the first device "
           "against copy bandwidth and cuBLAS), steps (steps with CUDA graphs off and on, both "
           "modes, the first device) or all (thread, process, node and peers)")
      .add(transport, "transport", "shared_memory, sockets or both")
      .add(spin_us, "spin-us", "graph_option::spin_wait of the shared-memory path (default 50)")
      .add(progress_ms, "progress-timeout-ms",
           "graph_option::progress_timeout of process mode (default 10000; longer under a "
           "sanitizer, which can stall a child for seconds)")
      .add(quick, "quick,q", "fewer and smaller repetitions (a run of under a minute on sim)")
      .add(sweep, "sweep", "also per-operator time against operators per sync")
      .add(json, "json", "write every figure to this file as JSON")
      .add(timeline, "timeline", "write each mode's timeline to FILE.MODE.json (slows it down)")
      .add(node_streams, "node-streams", "node mode: graph_option::node_streams (default 8)")
      .add(peers_process, "peers-process",
           "peers mode: the devices in child processes (direct: CUDA IPC) instead of threads")
      .add(zmq_peer, "zmq-peer", "(internal) run as the peer process of the ZMQ floor");
  }
};

using ag::bench::cannot_run;
using ag::bench::elements;
using ag::bench::floor_figures;
using ag::bench::full_sizes;
using ag::bench::measure_floors;
using ag::bench::measure_mode;
using ag::bench::mode_figures;
using ag::bench::quick_sizes;
using ag::bench::sizes;

// --mode=peers (apps/ag-bench/peer_bench.hpp).
ag::bench::peer_sizes peer_sizes_of(bool quick) {
  constexpr std::size_t KiB = 1024, MiB = KiB << 10;
  if (quick)
    return {4 * MiB, 5, {4 * KiB, 64 * KiB, 1 * MiB}, 20, 5};
  return {64 * MiB, 20, {4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 64 * MiB, 256 * MiB}, 100, 10};
}

// Why `devices` cannot be measured by --mode=peers; empty when they can.
std::string peers_refusal(const std::vector<ag::device>& devices) {
  if (devices.size() < 2)
    return "needs two devices or more";
  const auto kind = devices.front().type;
  for (const auto& d : devices)
    if (!d.local() || d.type != kind)
      return "needs devices of this machine, all cuda or all sim";
  return {};
}

// -- output ----------------------------------------------------------------------------------------

using ag::bench::num;


// One figure in each mode: on the shared-memory path (thread, process) and on the sockets alone.
struct row {
  std::string what;
  std::string unit;
  double thread = NAN, process = NAN, floor = NAN;
  std::string floor_name;
  bool lower_is_better = true;
  std::string target; // "process <= 1.25x", ...
  double thread_sockets = NAN, process_sockets = NAN;
};

double ratio(double x, double floor) { return std::isnan(x) || std::isnan(floor) ? NAN : x / floor; }

// The zmq floors of each path, on one line each.
void print_zmq_floors(const floor_figures& f) {
  for (const auto* z : {&f.zmq, &f.zmq_tcp, &f.zmq_tcp_curve})
    if (*z)
      std::printf("  zmq %-9s round trip %s us, streamed %s us/msg, bulk %s GB/s (%zu MiB in 4 MiB "
                  "pieces)\n",
                  ag::bench::to_string((*z)->path), num((*z)->round_trip_us).c_str(),
                  num((*z)->streamed_us_per_msg, 3).c_str(), num((*z)->bulk_gbps).c_str(),
                  (*z)->bulk_bytes >> 20);
  std::printf("\n");
}

void print_table(const std::vector<row>& rows) {
  std::printf("%-34s %-8s %9s %9s %9s %9s %9s  %-34s %8s %8s  %s\n", "measure", "unit", "thread",
              "process", "thr/sock", "proc/sock", "floor", "floor is", "thr/flr", "proc/flr",
              "target");
  for (const auto& r : rows)
    std::printf("%-34s %-8s %9s %9s %9s %9s %9s  %-34s %8s %8s  %s\n", r.what.c_str(),
                r.unit.c_str(), num(r.thread).c_str(), num(r.process).c_str(),
                num(r.thread_sockets).c_str(), num(r.process_sockets).c_str(),
                num(r.floor).c_str(), r.floor_name.c_str(), num(ratio(r.thread, r.floor)).c_str(),
                num(ratio(r.process, r.floor)).c_str(), r.target.c_str());
}

// One figure of the node measurement (--mode=node): a device on an ag-node of this machine.
struct node_row {
  std::string what;
  std::string unit;
  double value = NAN, floor = NAN;
  std::string floor_name;
  std::string target; // "<= 1.2", ...
};

std::vector<node_row> make_node_rows(const ag::bench::node_figures& f, const floor_figures& fl) {
  const double curve_rt = fl.zmq_tcp_curve ? fl.zmq_tcp_curve->round_trip_us : NAN;
  const double tcp_bulk = fl.zmq_tcp ? fl.zmq_tcp->bulk_gbps : NAN;
  const double curve_bulk = fl.zmq_tcp_curve ? fl.zmq_tcp_curve->bulk_gbps : NAN;
  return {
    {"sync round trip (add, sync())", "us", f.sync_round_trip_us, curve_rt,
     "zmq tcp+CURVE round trip", "<= 1.2"},
    {"read round trip (a + b).to_vector()", "us", f.read_round_trip_us, curve_rt,
     "zmq tcp+CURVE round trip", ""},
    {"start-up to ready", "ms", f.startup_ms, 1000.0, "the 1 s target", ""},
    {"upload, cpu tensor .to(node)", "GB/s", f.upload_gbps, tcp_bulk, "zmq tcp bulk, 4 MiB pieces",
     ">= 0.8"},
    {"  against the CURVE floor", "GB/s", f.upload_gbps, curve_bulk, "zmq tcp+CURVE bulk", ""},
    {"download, node tensor .to(cpu)", "GB/s", f.download_gbps, tcp_bulk,
     "zmq tcp bulk, 4 MiB pieces", ""},
    {"  against the CURVE floor", "GB/s", f.download_gbps, curve_bulk, "zmq tcp+CURVE bulk", ""},
  };
}

void print_node_table(const std::string& device, const std::vector<node_row>& rows) {
  std::printf("node: %s, an ag-node on 127.0.0.1 (control: CAF over TLS; data: ZMQ over TCP "
              "with CURVE)\n",
              device.c_str());
  std::printf("%-38s %-6s %9s %9s  %-28s %8s  %s\n", "measure", "unit", "node", "floor",
              "floor is", "node/flr", "target");
  for (const auto& r : rows)
    std::printf("%-38s %-6s %9s %9s  %-28s %8s  %s\n", r.what.c_str(), r.unit.c_str(),
                num(r.value).c_str(), num(r.floor).c_str(), r.floor_name.c_str(),
                num(ratio(r.value, r.floor)).c_str(), r.target.c_str());
}

std::string json_num(double x) { return std::isnan(x) ? "null" : num(x, 4); }

// {"round_trip_us": ..., "streamed_us_per_msg": ..., "bulk_gbps": ...}, or null.
std::string json_zmq(const std::optional<ag::bench::zmq_floor>& z) {
  if (!z)
    return "null";
  return "{\"round_trip_us\": " + json_num(z->round_trip_us) + ", \"streamed_us_per_msg\": "
         + json_num(z->streamed_us_per_msg) + ", \"bulk_gbps\": " + json_num(z->bulk_gbps)
         + ", \"bulk_bytes\": " + std::to_string(z->bulk_bytes) + "}";
}

// "node": the node figures (null when not measured), "node_rows": their rows.
void write_json_node(std::ostringstream& o, const std::optional<ag::bench::node_figures>& node,
                     const std::vector<node_row>& rows) {
  o << ",\n  \"node\": ";
  if (!node)
    o << "null";
  else
    o << "{\"device\": \"" << node->device << "\", \"startup_ms\": " << json_num(node->startup_ms)
      << ", \"sync_round_trip_us\": " << json_num(node->sync_round_trip_us)
      << ", \"read_round_trip_us\": " << json_num(node->read_round_trip_us)
      << ", \"upload_gbps\": " << json_num(node->upload_gbps)
      << ", \"download_gbps\": " << json_num(node->download_gbps) << "}";
  o << ",\n  \"node_rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    o << (i ? "," : "") << "\n    {\"what\": \"" << r.what << "\", \"unit\": \"" << r.unit
      << "\", \"node\": " << json_num(r.value) << ", \"floor\": " << json_num(r.floor)
      << ", \"floor_is\": \"" << r.floor_name << "\", \"target\": \"" << r.target << "\"}";
  }
  o << (rows.empty() ? "]" : "\n  ]");
}

void write_json(const std::string& path, const std::string& devices, bool quick,
                const std::vector<row>& rows, const std::map<std::string, mode_figures>& modes,
                const floor_figures& fl, const std::optional<ag::bench::node_figures>& node,
                const std::vector<node_row>& node_rows,
                const std::optional<ag::bench::peer_figures>& peers,
                const std::vector<ag::bench::peer_row>& peer_rows) {
  std::ostringstream o;
  o << "{\n  \"devices\": \"" << devices << "\",\n  \"quick\": " << (quick ? "true" : "false")
    << ",\n  \"floors\": {\"launch_us\": " << json_num(fl.launch ? fl.launch->back_to_back_us : NAN)
    << ", \"launch_sync_us\": " << json_num(fl.launch ? fl.launch->launch_sync_us : NAN)
    << ", \"h2d_gbps\": " << json_num(fl.h2d_gbps ? *fl.h2d_gbps : NAN)
    << ", \"sgemm_tflops\": " << json_num(fl.sgemm_tflops ? *fl.sgemm_tflops : NAN)
    << ", \"zmq_round_trip_us\": " << json_num(fl.zmq ? fl.zmq->round_trip_us : NAN)
    << ", \"zmq_streamed_us\": " << json_num(fl.zmq ? fl.zmq->streamed_us_per_msg : NAN)
    << ", \"shm_round_trip_us\": " << json_num(fl.shm ? fl.shm->spin_us : NAN)
    << ", \"shm_futex_round_trip_us\": " << json_num(fl.shm ? fl.shm->futex_us : NAN)
    << ", \"shm_spin_then_futex_round_trip_us\": "
    << json_num(fl.shm ? fl.shm->spin_then_futex_us : NAN)
    << ", \"zmq\": {\"ipc\": " << json_zmq(fl.zmq) << ", \"tcp\": " << json_zmq(fl.zmq_tcp)
    << ", \"tcp_curve\": " << json_zmq(fl.zmq_tcp_curve) << "}},\n  \"modes\": {";
  bool first = true;
  for (const auto& [name, f] : modes) {
    o << (first ? "" : ",") << "\n    \"" << name << "\": {\"startup_ms\": "
      << json_num(f.startup_ms) << ", \"streamed_us\": " << json_num(f.streamed_us)
      << ", \"submit_us\": " << json_num(f.submit_us)
      << ", \"round_trip_us\": " << json_num(f.round_trip_us)
      << ", \"h2d_gbps\": " << json_num(f.h2d_gbps)
      << ", \"matmul_tflops\": " << json_num(f.matmul_tflops)
      << ", \"idle_cpu_percent\": " << json_num(f.idle_cpu_percent)
      << ", \"queued_ratio\": " << json_num(f.queued_ratio)
      << ", \"queued_failure_ratio\": " << json_num(f.queued_failure_ratio) << ", \"sweep\": [";
    for (std::size_t i = 0; i < f.sweep.size(); ++i)
      o << (i ? ", " : "") << "[" << f.sweep[i].first << ", " << json_num(f.sweep[i].second)
        << "]";
    o << "]}";
    first = false;
  }
  o << "\n  },\n  \"rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    o << (i ? "," : "") << "\n    {\"what\": \"" << r.what << "\", \"unit\": \"" << r.unit
      << "\", \"thread\": " << json_num(r.thread) << ", \"process\": " << json_num(r.process)
      << ", \"thread_sockets\": " << json_num(r.thread_sockets)
      << ", \"process_sockets\": " << json_num(r.process_sockets)
      << ", \"floor\": " << json_num(r.floor) << ", \"target\": \"" << r.target << "\"}";
  }
  o << "\n  ]";
  write_json_node(o, node, node_rows);
  ag::bench::write_json_peers(o, peers ? &*peers : nullptr, peer_rows);
  o << "\n}\n";
  std::ofstream out{path};
  out << o.str();
  if (!out.flush())
    throw cannot_run("--json=" + path + ": cannot write it");
}

int start(int argc, char** argv) {
  bench_config cfg;
  if (auto code = cfg.read(argc, argv))
    return *code;
  if (!cfg.remainder.empty())
    return cfg.usage("unexpected argument \"" + cfg.remainder.front() + "\"");
  if (!cfg.zmq_peer.empty())
    return ag::bench::zmq_peer_main(cfg.zmq_peer);
  if (cfg.mode != "thread" && cfg.mode != "process" && cfg.mode != "both" && cfg.mode != "node"
      && cfg.mode != "peers" && cfg.mode != "all" && cfg.mode != "ops" && cfg.mode != "steps")
    return cfg.usage("--mode=" + cfg.mode
                     + ": expected thread, process, both, node, peers, ops, steps or all");
  if (cfg.transport != "shared_memory" && cfg.transport != "sockets" && cfg.transport != "both")
    return cfg.usage("--transport=" + cfg.transport + ": expected shared_memory, sockets or both");
  if (cfg.spin_us < 0 || cfg.spin_us > 1000000)
    return cfg.usage("--spin-us=" + std::to_string(cfg.spin_us) + ": expected 0 to 1000000");
  if (cfg.progress_ms < 1 || cfg.progress_ms > 3600000)
    return cfg.usage("--progress-timeout-ms=" + std::to_string(cfg.progress_ms)
                     + ": expected 1 to 3600000");
  std::vector<ag::device> devices;
  try {
    if (cfg.devices.empty())
      devices = {ag::cuda_device_count() > 0 ? ag::device::cuda(0) : ag::device::sim(0)};
    else
      devices = ag::parse_devices(cfg.devices);
  } catch (const std::exception& e) {
    return cfg.usage("--devices=" + cfg.devices + ": " + e.what());
  }
  if (devices.empty() || std::any_of(devices.begin(), devices.end(),
                                     [](const ag::device& d) { return d.is_cpu(); }))
    return cfg.usage("--devices=" + cfg.devices
                     + ": name the devices to measure (cuda:N or sim:N), not cpu or auto");
  const std::string peers_no = peers_refusal(devices);
  if (cfg.mode == "peers" && !peers_no.empty())
    return cfg.usage("--mode=peers, --devices=" + ag::to_string(devices) + ": " + peers_no);
  const bool peers_only = cfg.mode == "peers";
  if (cfg.mode == "ops") { // the operators of real networks on the first device (ops_bench.hpp)
    ag::install_stop_signals();
    try {
      const auto rows = ag::bench::measure_ops(devices.front(), cfg.quick
                                                                  ? ag::bench::quick_ops_sizes
                                                                  : ag::bench::full_ops_sizes);
      std::printf("ag-bench --mode=ops: %s%s\n", devices.front().str().c_str(),
                  cfg.quick ? " (quick)" : "");
      for (const auto& r : rows) {
        std::printf("%-44s %10.2f %-8s", r.what.c_str(), r.value, r.unit.c_str());
        if (r.floor > 0)
          std::printf("  %.2fx of %.2f (%s)", r.value / r.floor, r.floor, r.against.c_str());
        std::printf("\n");
      }
      return ag::app::exit_ok;
    } catch (const std::exception& e) {
      return cfg.fail(ag::app::exit_cannot_run, e.what());
    }
  }
  if (cfg.mode == "steps") { // steps as graphs on the first device (steps_bench.hpp)
    ag::install_stop_signals();
    try {
      const auto rows = ag::bench::measure_steps(devices.front(), cfg.quick, cfg.timeline);
      std::printf("ag-bench --mode=steps: %s%s, graph_option::cuda_graphs off and on\n",
                  devices.front().str().c_str(), cfg.quick ? " (quick)" : "");
      std::printf("%-32s %7s %10s %10s %8s %10s %10s %10s\n", "", "unit", "off", "on", "on/off",
                  "on/launch", "graph", "on/graph");
      for (const auto& r : rows) {
        std::printf("%-32s %7s %10.3f %10.3f %7.2fx", r.what.c_str(), r.unit.c_str(), r.off, r.on,
                    r.on / r.off);
        if (r.launch > 0)
          std::printf(" %9.2fx", r.on / r.launch);
        else
          std::printf(" %10s", "n/a");
        if (r.graph > 0)
          std::printf(" %10.3f %9.2fx", r.graph, r.on / r.graph);
        else
          std::printf(" %10s %10s", "n/a", "n/a");
        std::printf("\n");
      }
      if (!rows.empty() && rows.front().launch > 0)
        std::printf("raw launch, back to back: %.3f us per add\n", rows.front().launch);
      return ag::app::exit_ok;
    } catch (const std::exception& e) {
      return cfg.fail(ag::app::exit_cannot_run, e.what());
    }
  }
  // A stop signal ends the runtimes' children and the node's (through ag-node) in order.
  ag::bench::stop_local_node_on_signals();
  ag::install_stop_signals();
  try {
    const sizes& n = cfg.quick ? quick_sizes : full_sizes;
    const std::string self = "/proc/self/exe";
    std::printf("ag-bench: devices %s%s\n", ag::to_string(devices).c_str(),
                cfg.quick ? " (quick)" : "");
    std::fflush(stdout);
    // --mode=peers alone needs only its own floors and the launch-and-sync one.
    floor_figures floors;
    if (!peers_only)
      floors = measure_floors(devices, self, n, cfg.quick);
    else if (devices.front().type == ag::device::kind::cuda)
      floors.launch = ag::floors::raw_launch(devices.front().index, n.launches, elements);
    // "thread", "process": the shared-memory path; "thread_sockets", "process_sockets".
    std::map<std::string, mode_figures> modes;
    for (const auto transport : {ag::transport::shared_memory, ag::transport::sockets}) {
      const bool shm = transport == ag::transport::shared_memory;
      if (cfg.transport != "both" && cfg.transport != (shm ? "shared_memory" : "sockets"))
        continue;
      for (const bool process : {false, true}) {
        const std::string mode = process ? "process" : "thread";
        const std::string name = mode + (shm ? "" : "_sockets");
        if (cfg.mode == "both" || cfg.mode == "all" || cfg.mode == mode)
          modes[name] = measure_mode(devices, process, transport,
                                     std::chrono::microseconds{cfg.spin_us},
                                     std::chrono::milliseconds{cfg.progress_ms}, n, cfg.sweep,
                                     cfg.timeline, name);
      }
    }
    std::optional<ag::bench::node_figures> node;
    if (cfg.mode == "node" || cfg.mode == "all")
      node = ag::bench::measure_node(devices.front(),
                                     {n.round_trips, n.h2d_bytes, n.h2d_repeats, cfg.node_streams,
                                      cfg.timeline, std::chrono::microseconds{cfg.spin_us}});
    std::optional<ag::bench::peer_figures> peers;
    if ((peers_only || cfg.mode == "all") && peers_no.empty())
      peers = ag::bench::measure_peers(devices, peer_sizes_of(cfg.quick),
                                       floors.launch ? floors.launch->launch_sync_us : NAN,
                                       cfg.peers_process);
    auto get = [&](const std::string& mode, double mode_figures::*field) {
      auto it = modes.find(mode);
      return it == modes.end() ? NAN : it->second.*field;
    };
    const double launch = floors.launch ? floors.launch->back_to_back_us : NAN;
    const double launch_sync = floors.launch ? floors.launch->launch_sync_us : NAN;
    const double zmq_rt = floors.zmq ? floors.zmq->round_trip_us : NAN;
    const double shm_rt = floors.shm ? floors.shm->spin_us : NAN;
    const std::string k = std::to_string(devices.size());
    // Each row: one field of every mode's figures, its floor and its target.
    auto make = [&](std::string what, std::string unit, double mode_figures::*field, double floor,
                    std::string floor_name, bool lower_is_better, std::string target) {
      row r{std::move(what), std::move(unit), get("thread", field), get("process", field), floor,
            std::move(floor_name), lower_is_better, std::move(target)};
      r.thread_sockets = get("thread_sockets", field);
      r.process_sockets = get("process_sockets", field);
      return r;
    };
    std::vector<row> rows{
      make("streamed per step (" + k + " device" + (devices.size() > 1 ? "s" : "") + ")", "us",
           &mode_figures::streamed_us, launch, "raw launch, back to back", true,
           "thread <= 1.15, process <= 1.25"),
      make("  of it, the user's thread submitting", "us", &mode_figures::submit_us, NAN, "", true,
           ""),
      make("sync round trip", "us", &mode_figures::round_trip_us, launch_sync, "launch+sync", true,
           "thread <= 2.0, process <= 2.5"),
      make("  against the zmq floor", "us", &mode_figures::round_trip_us, zmq_rt,
           "zmq ipc round trip", true, "sim: process < 1.0, thread < 0.5"),
      make("  against the shm floor", "us", &mode_figures::round_trip_us, shm_rt,
           "shm ping-pong, spinning", true, ""),
      make("idle CPU, controller and children", "% core", &mode_figures::idle_cpu_percent, NAN, "",
           true, "< 1"),
      make(std::to_string(n.queued) + " queued all_reduce, settled", "x adds",
           &mode_figures::queued_ratio, NAN, "as many adds, same run", true, "<= 10"),
      make("  and failed, children killed", "x adds", &mode_figures::queued_failure_ratio, NAN,
           "as many adds, same run", true, "<= 10"),
      make("start-up to ready", "ms", &mode_figures::startup_ms, 1000.0, "the 1 s target", true,
           "<= 1.0 with one GPU"),
      make("host-to-device, cpu tensor .to()", "GB/s", &mode_figures::h2d_gbps,
           floors.h2d_gbps ? *floors.h2d_gbps : NAN, "cudaMemcpy, registered shm", false,
           ">= 0.9"),
      make("matmul "
             + std::to_string(devices.front().type == ag::device::kind::cuda
                                ? n.matmul_n
                                : std::min(n.matmul_n, 512))
             + "^2",
           "TFLOP/s", &mode_figures::matmul_tflops,
           floors.sgemm_tflops ? *floors.sgemm_tflops : NAN, "cuBLAS SGEMM direct", false,
           ">= 0.95"),
    };
    if (peers_only) {
      std::printf("floors: launch %s us back to back, %s us with sync\n\n", num(launch).c_str(),
                  num(launch_sync).c_str());
    } else {
      std::printf("floors: launch %s us back to back, %s us with sync; zmq ipc round trip %s us, "
                  "streamed %s us/msg; shared-memory round trip %s us spinning, %s us on a futex, "
                  "%s us spinning then sleeping\n",
                  num(launch).c_str(), num(launch_sync).c_str(), num(zmq_rt).c_str(),
                  num(floors.zmq ? floors.zmq->streamed_us_per_msg : NAN, 3).c_str(),
                  num(shm_rt).c_str(), num(floors.shm ? floors.shm->futex_us : NAN).c_str(),
                  num(floors.shm ? floors.shm->spin_then_futex_us : NAN).c_str());
      print_zmq_floors(floors);
    }
    if (!modes.empty())
      print_table(rows);
    std::vector<node_row> node_rows;
    if (node) {
      node_rows = make_node_rows(*node, floors);
      if (!modes.empty())
        std::printf("\n");
      print_node_table(node->device, node_rows);
    }
    std::vector<ag::bench::peer_row> peer_rows;
    if (peers) {
      peer_rows = ag::bench::make_peer_rows(*peers);
      if (!modes.empty() || node)
        std::printf("\n");
      ag::bench::print_peer_table(*peers, peer_rows);
    } else if (cfg.mode == "all") {
      std::printf("\npeers: not measured (%s)\n", peers_no.c_str());
    }
    if (cfg.sweep && !modes.empty()) {
      std::printf("\nper-operator time (us) against operators per sync, on %s:\n%10s",
                  devices.front().str().c_str(), "ops/sync");
      for (const auto& [name, f] : modes)
        std::printf(" %10s", name.c_str());
      std::printf("\n");
      const auto& any = modes.begin()->second.sweep;
      for (std::size_t i = 0; i < any.size(); ++i) {
        std::printf("%10d", any[i].first);
        for (const auto& [name, f] : modes)
          std::printf(" %10s", num(f.sweep[i].second).c_str());
        std::printf("\n");
      }
    }
    if (!cfg.json.empty())
      write_json(cfg.json, ag::to_string(devices), cfg.quick, rows, modes, floors, node,
                 node_rows, peers, peer_rows);
  } catch (const cannot_run& e) {
    return cfg.fail(ag::app::exit_cannot_run, e.what());
  } catch (const ag::bench::cannot_start& e) {
    return cfg.fail(ag::app::exit_cannot_run, e.what());
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_failed, e.what());
  }
  return ag::app::exit_ok;
}

} // namespace

int main(int argc, char** argv) {
  return ag::app::guarded_main("ag-bench", start, argc, argv, ag::app::exit_failed);
}
