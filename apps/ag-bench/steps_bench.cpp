#include "apps/ag-bench/steps_bench.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include <actorgraph/actorgraph.hpp>

#include "apps/ag-bench/train_step.hpp"
#include "cuda/floors.hpp"

namespace ag::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double us_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

constexpr int elements = 4096;
constexpr int step_sizes[] = {1, 16, 64, 256};

graph_option options_of(const device& where, bool process, bool graphs) {
  graph_option opt;
  opt.devices = {where};
  opt.per_device_per_process = process;
  opt.cuda_graphs = graphs ? cuda_graphs::automatic : cuda_graphs::off;
  return opt;
}

// Microseconds per add of steps of k adds (c = a + b, each c dropped as the next comes), each step
// marked, `steps` of them streamed and one sync, after enough to capture and settle.
double per_add(runtime& rt, const device& where, int k, int steps) {
  const auto a = rt.full({elements}, 1.0, where);
  const auto b = rt.full({elements}, 2.0, where);
  auto run = [&](int n) {
    for (int s = 0; s < n; ++s) {
      for (int i = 0; i < k; ++i)
        (void)(a + b);
      rt.mark_step();
    }
  };
  run(8);
  rt.sync();
  const auto t0 = clock_type::now();
  run(steps);
  rt.sync();
  const double us = us_since(t0) / (double(steps) * k);
  const auto c = (a + b).to_vector(); // and the adds still add
  if (c.empty() || c.front() != 3.0f)
    throw error("steps bench: an add gave " + std::to_string(c.empty() ? 0.0 : c.front()));
  return us;
}

// Microseconds per ag-train step, the loop marking each.
double per_train_step(runtime& rt, const device& where, int steps) {
  train_step step{rt, where};
  for (int i = 0; i < 8; ++i) {
    step();
    rt.mark_step();
  }
  rt.sync();
  const auto t0 = clock_type::now();
  for (int i = 0; i < steps; ++i) {
    step();
    rt.mark_step();
  }
  rt.sync();
  return us_since(t0) / steps;
}

} // namespace

std::vector<steps_row> measure_steps(const device& where, bool quick,
                                     const std::string& timeline) {
  const bool cuda = where.type == device::kind::cuda;
  // Per K and mode: the steps are total_ops / K.
  const int total_ops = quick ? 512 : timeline.empty() ? 65536 : 4096;
  const int train_steps = quick ? 4 : 500;
  double launch = 0;
  if (cuda)
    if (auto f = floors::raw_launch(where.index, 20000, elements))
      launch = f->back_to_back_us;
  std::vector<steps_row> rows;
  for (bool process : {false, true}) {
    const std::string mode = process ? "process" : "thread";
    std::vector<steps_row> mine;
    for (int k : step_sizes) {
      steps_row r;
      r.what = mode + ", " + std::to_string(k) + (k == 1 ? " add" : " adds") + " per step";
      r.unit = "us/op";
      r.launch = launch;
      if (cuda)
        r.graph = floors::graph_launch_us(where.index, k, elements,
                                          std::max(20, 20000 / k)).value_or(0);
      mine.push_back(r);
    }
    steps_row train;
    train.what = mode + ", ag-train step";
    train.unit = "us/step";
    for (bool graphs : {false, true}) {
      auto opt = options_of(where, process, graphs);
      if (graphs && !timeline.empty())
        opt.timeline_path = timeline + "." + mode + ".json";
      runtime rt{opt};
      for (std::size_t i = 0; i < mine.size(); ++i) {
        const int k = step_sizes[i];
        (graphs ? mine[i].on : mine[i].off) = per_add(rt, where, k, std::max(4, total_ops / k));
      }
      (graphs ? train.on : train.off) = per_train_step(rt, where, train_steps);
    }
    rows.insert(rows.end(), mine.begin(), mine.end());
    rows.push_back(train);
  }
  return rows;
}

} // namespace ag::bench
