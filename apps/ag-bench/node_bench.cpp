#include "apps/ag-bench/node_bench.hpp"

#include <chrono>
#include <optional>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "apps/ag-bench/local_node.hpp"
#include "apps/ag-bench/stats.hpp"

namespace ag::bench {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr int warm_up_round_trips = 10;
constexpr int64_t sync_elements = 16;
constexpr int64_t read_elements = 4096;
constexpr float upload_value = 0.5f;
// The node's and the runtime's silence limit, as both default to.
constexpr std::chrono::milliseconds node_timeout{5000};

double us_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

// `once` run warm_up_round_trips + `count` times: the median of the timed ones, in us.
template <class Once>
double median_us(int count, Once&& once) {
  std::vector<double> times;
  for (int i = 0; i < warm_up_round_trips + count; ++i) {
    const auto t0 = clock_type::now();
    once();
    if (i >= warm_up_round_trips)
      times.push_back(us_since(t0));
  }
  return median(std::move(times));
}

// `move` (one transfer and its sync) run 1 + `repeats` times: the median rate of the timed ones
// (the first pays for first-touch of the memory it lands in), in GB/s.
template <class Move>
double median_gbps(std::size_t bytes, int repeats, Move&& move) {
  std::vector<double> rates;
  for (int i = 0; i < repeats + 1; ++i) {
    const auto t0 = clock_type::now();
    move();
    if (i > 0)
      rates.push_back(double(bytes) / (us_since(t0) * 1e3));
  }
  return median(std::move(rates));
}

void measure(ag::runtime& rt, const ag::device& dev, const node_sizes& n, node_figures& f) {
  auto x = rt.full({sync_elements}, 1.0f, dev);
  auto y = rt.full({sync_elements}, 2.0f, dev);
  rt.sync();
  f.sync_round_trip_us = median_us(n.round_trips, [&] {
    auto z = x + y;
    rt.sync();
  });

  auto a = rt.full({read_elements}, 1.5f, dev);
  auto b = rt.full({read_elements}, 2.5f, dev);
  f.read_round_trip_us = median_us(n.round_trips, [&] {
    const auto v = (a + b).to_vector();
    if (v.size() != std::size_t(read_elements) || v.front() != 4.0f || v.back() != 4.0f)
      throw ag::error("node read round trip on " + dev.str() + ": wrong result");
  });

  const auto count = int64_t(n.bytes / sizeof(float));
  auto host = rt.from_vector({count}, std::vector<float>(std::size_t(count), upload_value),
                             ag::device::cpu());
  rt.sync();
  f.upload_gbps = median_gbps(n.bytes, n.repeats, [&] {
    auto on_node = host.to(dev);
    rt.sync();
  });
  auto on_node = host.to(dev);
  rt.sync();
  ag::tensor back;
  f.download_gbps = median_gbps(n.bytes, n.repeats, [&] {
    back = ag::tensor{}; // one copy on the cpu at a time, as one on the node at a time above
    back = on_node.to(ag::device::cpu());
    rt.sync();
  });
  const auto v = back.to_vector();
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] != upload_value)
      throw ag::error("node upload and download through " + dev.str() + ": element "
                      + std::to_string(i) + " came back as " + std::to_string(v[i]) + ", not "
                      + std::to_string(upload_value));
}

} // namespace

node_figures measure_node(const ag::device& local, const node_sizes& n) {
  node_figures f;
  std::optional<local_node> node;
  try {
    // With a timeline, the node's children write theirs beside it (TIMELINE.node-children/).
    node.emplace("n1", node_timeout,
                 n.timeline.empty() ? std::string{} : n.timeline + ".node-children");
  } catch (const ag::error& e) {
    throw cannot_start(std::string{"node mode: "} + e.what());
  }
  const auto dev = local.on("n1");
  f.device = dev.str();
  ag::graph_option opt;
  opt.devices = {dev};
  opt.per_device_per_process = true;
  opt.key_file = node->controller_key_file();
  opt.nodes = {node->as_node()};
  opt.node_timeout = node_timeout;
  opt.node_streams = n.streams;
  opt.spin_wait = n.spin;
  if (!n.timeline.empty()) // the controller's side alone: a node's children keep theirs
    opt.timeline_path = n.timeline + ".node.json";
  {
    std::optional<ag::runtime> rt;
    const auto t0 = clock_type::now();
    try {
      rt.emplace(opt);
    } catch (const std::exception& e) {
      throw cannot_start("node mode: a runtime on " + dev.str() + ": " + e.what());
    }
    f.startup_ms = us_since(t0) / 1e3;
    measure(*rt, dev, n, f);
  } // the runtime ends first: the node's child stops, and ag-node waits for the next controller
  node->stop();
  return f;
}

} // namespace ag::bench
