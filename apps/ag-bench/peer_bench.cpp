#include "apps/ag-bench/peer_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <utility>

#include <actorgraph/actorgraph.hpp>

#include "apps/ag-bench/node_bench.hpp"
#include "apps/ag-bench/stats.hpp"
#include "cuda/floors.hpp"
#include "cuda/kernel_stream.hpp"

namespace ag::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double us_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

// Bytes per microsecond, i.e. MB/s, over 1e3: GB/s.
double gbps(std::size_t bytes, double us) { return double(bytes) / (us * 1e3); }

// "4 KiB", "64 MiB".
std::string size_name(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0)
    return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

int64_t floats(std::size_t bytes) { return static_cast<int64_t>(bytes / sizeof(float)); }

// Every element of t is `expected`; else ag::error naming what.
void check_all(const ag::tensor& t, float expected, const std::string& what) {
  const auto v = t.to_vector();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != expected)
      throw ag::error(what + ": element " + std::to_string(i) + " is " + std::to_string(v[i])
                      + ", expected " + std::to_string(expected));
}

// Constructs a runtime in thread mode (or process mode) in `rt`.
void start(std::optional<ag::runtime>& rt, const std::vector<ag::device>& devices, bool direct,
           bool sim, bool process) {
  ag::graph_option opt;
  opt.devices = devices;
  opt.per_device_per_process = process;
  opt.peer_transfers = direct;
  opt.sim_peers = sim;
  try {
    rt.emplace(opt);
  } catch (const std::exception& e) {
    throw cannot_start(std::string{"peers, "} + (process ? "process" : "thread") + " mode ("
                       + (direct ? "direct" : "store")
                       + " path): " + e.what());
  }
}

// A tensor of move_bytes on devices[0] moved to devices[1] and synced: median GB/s.
double measure_move(ag::runtime& rt, const std::vector<ag::device>& devices, const peer_sizes& n,
                    const std::string& path) {
  auto src = rt.full({floats(n.move_bytes)}, 0.5f, devices[0]);
  rt.sync();
  std::vector<double> rates;
  ag::tensor moved;
  for (int i = 0; i < n.move_repeats + 1; ++i) {
    moved = ag::tensor{}; // the last one's memory goes back before the next
    const auto t0 = clock_type::now();
    moved = src.to(devices[1]);
    rt.sync();
    if (i > 0) // the first pays for the destination's first allocation (and peer access)
      rates.push_back(gbps(n.move_bytes, us_since(t0)));
  }
  if (moved.device() != devices[1])
    throw ag::error("move (" + path + "): the result is on " + moved.device().str());
  check_all(moved, 0.5f, "move of " + size_name(n.move_bytes) + " (" + path + ")");
  return median(rates);
}

// all_reduce of one part per device, `bytes` each, each repeat the call and sync(): median us.
double measure_reduce(ag::runtime& rt, const std::vector<ag::device>& devices, std::size_t bytes,
                      int repeats, const std::string& path) {
  std::vector<ag::tensor> parts;
  for (std::size_t d = 0; d < devices.size(); ++d)
    parts.push_back(rt.full({floats(bytes)}, float(d + 1), devices[d]));
  rt.sync();
  const int warm_up = 2; // the first allocations of each size, peer access, the kernels' first load
  std::vector<double> times;
  std::vector<ag::tensor> out;
  for (int i = 0; i < warm_up + repeats; ++i) {
    out.clear(); // the last results' memory goes back before the next call: memory stays bounded
    const auto t0 = clock_type::now();
    out = ag::all_reduce(parts);
    rt.sync();
    if (i >= warm_up)
      times.push_back(us_since(t0));
  }
  const auto w = float(devices.size());
  const float expected = w * (w + 1) / 2; // exact in float for any group a runtime has
  for (std::size_t d = 0; d < out.size(); ++d) {
    if (out[d].device() != devices[d])
      throw ag::error("all_reduce (" + path + "): result " + std::to_string(d) + " is on "
                      + out[d].device().str() + ", expected " + devices[d].str());
    check_all(out[d], expected,
              "all_reduce of " + size_name(bytes) + " (" + path + "), result on "
                + devices[d].str());
  }
  return median(times);
}

} // namespace

peer_figures measure_peers(const std::vector<ag::device>& devices, const peer_sizes& n,
                           double launch_sync_us, bool process) {
  if (devices.size() < 2)
    throw ag::error("peers: needs two devices or more");
  peer_figures f;
  f.devices = ag::to_string(devices);
  f.from = devices[0].str();
  f.to = devices[1].str();
  f.group = devices.size();
  f.sim = devices.front().type == ag::device::kind::sim;
  const bool cuda = devices.front().type == ag::device::kind::cuda;
  f.same_gpu = cuda && ag::cuda_ordinal(devices[0].index) == ag::cuda_ordinal(devices[1].index);
  f.process = process;
  f.move_bytes = n.move_bytes;
  f.launch_sync_us = launch_sync_us;

  // Floors first, with no runtime in the process: devices[0] to devices[1], as the move.
  auto floor_at = [&](std::size_t bytes, int repeats) {
    if (!cuda)
      return double(NAN);
    const auto g = ag::floors::peer_copy_gbps(devices[1].index, devices[0].index, bytes, repeats);
    return g ? *g : double(NAN);
  };
  auto repeats_of = [&](std::size_t bytes) {
    return bytes <= (std::size_t{1} << 20) ? n.small_repeats : n.large_repeats;
  };
  f.move_floor_gbps = floor_at(n.move_bytes, std::max(n.move_repeats, 20));
  for (const std::size_t bytes : n.reduce_bytes) {
    peer_reduce_figures r;
    r.bytes = bytes;
    r.repeats = repeats_of(bytes);
    r.floor_gbps = floor_at(bytes, std::max(r.repeats, 20)); // a floor's repeats cost little
    f.reduce.push_back(r);
  }

  const double w = double(devices.size());
  const double bus = 2 * (w - 1) / w;
  for (const bool direct : {true, false}) {
    const std::string path = direct ? "direct" : "store";
    std::optional<ag::runtime> rt;
    start(rt, devices, direct, f.sim, process);
    (direct ? f.move_direct_gbps : f.move_store_gbps) = measure_move(*rt, devices, n, path);
    for (auto& r : f.reduce) {
      const double us = measure_reduce(*rt, devices, r.bytes, r.repeats, path);
      (direct ? r.direct_us : r.store_us) = us;
      (direct ? r.direct_bus_gbps : r.store_bus_gbps) = bus * gbps(r.bytes, us);
    }
  }
  return f;
}

std::vector<peer_row> make_peer_rows(const peer_figures& f) {
  const std::string copy = f.same_gpu ? "D2D copy, one GPU" : "cudaMemcpyPeer";
  std::vector<peer_row> rows;
  rows.push_back({"move " + size_name(f.move_bytes) + " .to(), sync()", "GB/s", f.move_direct_gbps,
                  f.move_store_gbps, f.move_floor_gbps, copy + ", " + size_name(f.move_bytes),
                  ">= 0.9"});
  for (const auto& r : f.reduce) {
    const bool smallest = r.bytes == 4096; // against one launch and its synchronize
    rows.push_back({"all_reduce " + size_name(r.bytes) + "/part, time", "us", r.direct_us,
                    r.store_us, smallest ? f.launch_sync_us : NAN,
                    smallest ? "launch+sync" : "", smallest ? "< 3.0" : ""});
    rows.push_back({"  bus bandwidth", "GB/s", r.direct_bus_gbps, r.store_bus_gbps, r.floor_gbps,
                    copy + ", " + size_name(r.bytes),
                    r.bytes == (std::size_t{64} << 20) ? ">= 0.8" : ""});
  }
  return rows;
}

namespace {

double ratio(double x, double floor) { return std::isnan(x) || std::isnan(floor) ? NAN : x / floor; }

std::string json_num(double x) { return std::isnan(x) ? "null" : num(x, 4); }

} // namespace

void print_peer_table(const peer_figures& f, const std::vector<peer_row>& rows) {
  std::printf("peers: %s, %s mode; direct: graph_option::peer_transfers (%s), store: "
              "peer_transfers = false%s\n",
              f.devices.c_str(), f.process ? "process" : "thread",
              f.sim ? "sim devices, sim_peers"
                    : (f.same_gpu ? "lanes of one GPU, AG_CUDA_ORDINALS" : "peer GPUs"),
              f.sim ? "; floors n/a on sim" : "");
  std::printf("  move: %s .to(%s); all_reduce: one part on each device, time: median of the call "
              "and sync(), bus bandwidth: 2(W-1)/W x bytes / time, W = %zu; copy floors: "
              "cudaMemcpyPeerAsync %s -> %s\n",
              f.from.c_str(), f.to.c_str(), f.group, f.from.c_str(), f.to.c_str());
  std::printf("%-32s %-5s %9s %9s %9s  %-26s %8s %8s  %s\n", "measure", "unit", "direct", "store",
              "floor", "floor is", "dir/flr", "sto/flr", "target");
  for (const auto& r : rows)
    std::printf("%-32s %-5s %9s %9s %9s  %-26s %8s %8s  %s\n", r.what.c_str(), r.unit.c_str(),
                num(r.direct).c_str(), num(r.store).c_str(), num(r.floor).c_str(),
                r.floor_name.c_str(), num(ratio(r.direct, r.floor)).c_str(),
                num(ratio(r.store, r.floor)).c_str(), r.target.c_str());
}

void write_json_peers(std::ostream& o, const peer_figures* f, const std::vector<peer_row>& rows) {
  o << ",\n  \"peers\": ";
  if (!f) {
    o << "null";
  } else {
    o << "{\"devices\": \"" << f->devices << "\", \"from\": \"" << f->from << "\", \"to\": \""
      << f->to << "\", \"group\": " << f->group << ", \"sim\": " << (f->sim ? "true" : "false")
      << ", \"same_gpu\": " << (f->same_gpu ? "true" : "false")
      << ", \"process\": " << (f->process ? "true" : "false")
      << ", \"move_bytes\": " << f->move_bytes
      << ", \"move_direct_gbps\": " << json_num(f->move_direct_gbps)
      << ", \"move_store_gbps\": " << json_num(f->move_store_gbps)
      << ", \"move_floor_gbps\": " << json_num(f->move_floor_gbps)
      << ", \"launch_sync_us\": " << json_num(f->launch_sync_us) << ", \"all_reduce\": [";
    for (std::size_t i = 0; i < f->reduce.size(); ++i) {
      const auto& r = f->reduce[i];
      o << (i ? "," : "") << "\n      {\"bytes\": " << r.bytes << ", \"repeats\": " << r.repeats
        << ", \"direct_us\": " << json_num(r.direct_us)
        << ", \"store_us\": " << json_num(r.store_us)
        << ", \"direct_bus_gbps\": " << json_num(r.direct_bus_gbps)
        << ", \"store_bus_gbps\": " << json_num(r.store_bus_gbps)
        << ", \"floor_gbps\": " << json_num(r.floor_gbps) << "}";
    }
    o << (f->reduce.empty() ? "]}" : "\n    ]}");
  }
  o << ",\n  \"peer_rows\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    o << (i ? "," : "") << "\n    {\"what\": \"" << r.what << "\", \"unit\": \"" << r.unit
      << "\", \"direct\": " << json_num(r.direct) << ", \"store\": " << json_num(r.store)
      << ", \"floor\": " << json_num(r.floor) << ", \"floor_is\": \"" << r.floor_name
      << "\", \"target\": \"" << r.target << "\"}";
  }
  o << (rows.empty() ? "]" : "\n  ]");
}

} // namespace ag::bench
