#include "apps/ag-bench/queue_bench.hpp"
#include "apps/ag-bench/children.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include <sys/types.h>
#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

namespace ag::bench {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// The devices of each all_reduce: the runtime's first two, or its first and the cpu.
std::vector<ag::device> group_of(const ag::runtime& rt) {
  const auto& d = rt.devices();
  return d.size() >= 2 ? std::vector<ag::device>{d[0], d[1]}
                       : std::vector<ag::device>{d.front(), ag::device::cpu()};
}

// Queues `count` all_reduces of two 4-element parts with no wait between them.
void queue_all_reduces(ag::runtime& rt, int count) {
  const auto group = group_of(rt);
  const auto x = rt.full({4}, 1.0f, group[0]);
  const auto y = rt.full({4}, 2.0f, group[1]);
  for (int i = 0; i < count; ++i)
    (void)ag::all_reduce({x, y});
}

} // namespace

queue_figures measure_queued_collectives(const ag::graph_option& opt, int count) {
  queue_figures f;
  f.count = count;
  {
    ag::runtime rt{opt};
    const auto dev0 = rt.devices().front();
    const auto a = rt.full({4}, 1.0f, dev0);
    const auto b = rt.full({4}, 2.0f, dev0);
    rt.sync();
    auto t0 = clock_type::now();
    ag::tensor c;
    for (int i = 0; i < count; ++i)
      c = a + b;
    rt.sync();
    f.adds_s = seconds_since(t0);
    if (c.to_vector() != std::vector<float>(4, 3.0f))
      throw ag::error("queued adds: wrong result");

    const auto group = group_of(rt);
    const auto x = rt.full({4}, 1.0f, group[0]);
    const auto y = rt.full({4}, 2.0f, group[1]);
    rt.sync();
    t0 = clock_type::now();
    std::vector<ag::tensor> last;
    for (int i = 0; i < count; ++i)
      last = ag::all_reduce({x, y});
    rt.sync();
    f.collectives_s = seconds_since(t0);
    for (const auto& r : last)
      if (r.to_vector() != std::vector<float>(4, 3.0f))
        throw ag::error("queued all_reduce: wrong result");
  }
  if (!opt.per_device_per_process)
    return f;
  // The children stopped, every collective queued behind them, then killed: how long until the
  // failure has settled (sync() throws naming it, stats() answers).
  // Only this runtime's children: the caller's runtime (whose children --sweep still uses) lives on.
  const auto others = children_of_this_process();
  ag::runtime rt{opt};
  auto children = children_of_this_process();
  children.erase(std::remove_if(children.begin(), children.end(),
                                [&](pid_t c) {
                                  return std::find(others.begin(), others.end(), c) != others.end();
                                }),
                 children.end());
  for (pid_t c : children)
    ::kill(c, SIGSTOP);
  queue_all_reduces(rt, count);
  const auto t0 = clock_type::now();
  for (pid_t c : children)
    ::kill(c, SIGKILL);
  bool failed = false;
  try {
    rt.sync();
  } catch (const ag::error&) { // naming the killed devices
    failed = true;
  }
  if (!failed)
    throw ag::error("queued all_reduce: sync() succeeded although every child was killed");
  (void)rt.stats();
  f.failure_s = seconds_since(t0);
  return f;
}

} // namespace ag::bench
