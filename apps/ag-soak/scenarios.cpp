// The scenarios of ag-soak: what a hostile user does to a runtime (millions of operators with no
// read, a child that stops reading, uploads far larger than the store), with what the controller's
// memory, the runtime's backpressure and the children did meanwhile.
#include "apps/ag-soak/scenarios.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <signal.h>

#include <actorgraph/actorgraph.hpp>

#include "apps/ag-soak/flat_json.hpp"
#include "apps/ag-soak/periodic.hpp"
#include "apps/ag-soak/proc_files.hpp"

namespace ag::soak {

namespace {

using clock_type = std::chrono::steady_clock;

// How often memory and the runtime's stats are sampled.
constexpr std::chrono::milliseconds sample_period{20};

// Elements of the flooded tensors: small, so that the flood measures the cost per operator.
constexpr int64_t flood_elements = 256;

// Elements of one upload: 1 MiB of floats.
constexpr int64_t upload_elements = int64_t{1} << 18;

// The store of the uploads scenarios: far smaller than what they upload.
constexpr std::size_t upload_store_bytes = std::size_t{16} << 20;

// Every how many uploads one is kept and checked.
constexpr long long upload_keep_every = 100;

// The progress_timeout of flood-stopped.
constexpr std::chrono::milliseconds stopped_progress_timeout{2000};

// How long flood-stopped waits, after sync() reported sim:0's child killed, for it to be gone.
constexpr std::chrono::milliseconds stopped_kill_wait{5000};

// A runtime that could not start: the scenario cannot run here (exit code 3).
struct cannot_run : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// What one scenario measured and what it found wrong.
struct report {
  std::string mode;
  long long iterations = 0;
  long long submitted = 0;   // operator calls this scenario made
  double submit_s = NAN;     // until the last call of the flood returned
  double wall_s = NAN;       // from the first call until the last check
  long rss_start_kib = -1;   // RssAnon once the runtime was ready
  std::size_t blocked_submits = 0;
  std::size_t dispatched = 0; // runtime_stats::operators
  int children_expected = 0;
  int children_alive = -1;
  bool values_right = false;
  std::string sync_error; // flood-stopped: what sync() threw
  char stopped_state = '?'; // flood-stopped: its child's state in /proc when sync() threw
  double stopped_gone_ms = NAN; // flood-stopped: from sync()'s error until the child was gone
  std::vector<std::string> problems;

  void wrong(std::string what) { problems.push_back(std::move(what)); }
};

// Samples peak RssAnon from the start, and the runtime's in-flight operators while one is watched.
class probe {
public:
  probe()
    : memory_(sample_period, [this] {
        const long kib = status_kib("RssAnon");
        long seen = peak_rss_kib_.load();
        while (kib > seen && !peak_rss_kib_.compare_exchange_weak(seen, kib)) {
        }
      }) {}

  void watch(ag::runtime& rt) {
    stats_.emplace(sample_period, [this, &rt] {
      try {
        const auto s = rt.stats();
        std::size_t seen = peak_in_flight_.load();
        while (s.in_flight_ops > seen && !peak_in_flight_.compare_exchange_weak(seen, s.in_flight_ops)) {
        }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock{mtx_};
        if (stats_error_.empty())
          stats_error_ = e.what();
      }
    });
  }

  void unwatch() { stats_.reset(); }

  void stop() { memory_.stop(); }

  long peak_rss_kib() const { return peak_rss_kib_.load(); }
  std::size_t peak_in_flight() const { return peak_in_flight_.load(); }
  std::string stats_error() {
    std::lock_guard<std::mutex> lock{mtx_};
    return stats_error_;
  }

private:
  std::atomic<long> peak_rss_kib_{-1};
  std::atomic<std::size_t> peak_in_flight_{0};
  std::mutex mtx_;
  std::string stats_error_;
  periodic memory_;
  std::optional<periodic> stats_;
};

// Watches a runtime's stats until the end of the scope; declared after the runtime, so that the
// sampling ends before the runtime goes, on an exception too.
class watching {
public:
  watching(probe& p, ag::runtime& rt) : p_(p) { p_.watch(rt); }
  ~watching() { p_.unwatch(); }
  watching(const watching&) = delete;
  watching& operator=(const watching&) = delete;

private:
  probe& p_;
};

void start(std::optional<ag::runtime>& rt, const ag::graph_option& opt) {
  try {
    rt.emplace(opt);
  } catch (const std::exception& e) {
    throw cannot_run(std::string{opt.per_device_per_process ? "process" : "thread"}
                     + " mode runtime did not start: " + e.what());
  }
}

// Every element of `got` (the value of `what`) equals `want`.
bool check_all(report& r, const std::vector<float>& got, int64_t count, float want,
               const std::string& what) {
  if (got.size() != std::size_t(count)) {
    r.wrong(what + ": " + std::to_string(got.size()) + " elements read back, expected "
            + std::to_string(count));
    return false;
  }
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want) {
      r.wrong(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i])
              + ", expected " + std::to_string(want));
      return false;
    }
  return true;
}

void count_children(report& r) {
  r.children_alive = int(runner_children().size());
  if (r.children_alive != r.children_expected)
    r.wrong(std::to_string(r.children_alive) + " ag-runner children alive at the end, expected "
            + std::to_string(r.children_expected));
}

void final_stats(report& r, ag::runtime& rt) {
  const auto s = rt.stats();
  r.blocked_submits = s.blocked_submits;
  r.dispatched = s.operators;
}

// x = a + a on sim:0 and y = b + b on sim:1, `n` times with no read; then x and y read back.
void flood(report& r, probe& p, bool process, long long n) {
  ag::graph_option opt;
  opt.devices = {ag::device::sim(0), ag::device::sim(1)};
  opt.per_device_per_process = process;
  r.children_expected = process ? 2 : 0;
  std::optional<ag::runtime> rt;
  start(rt, opt);
  r.rss_start_kib = status_kib("RssAnon");
  watching w{p, *rt};
  const auto t0 = clock_type::now();
  const auto a = rt->full({flood_elements}, 1.5f, ag::device::sim(0));
  const auto b = rt->full({flood_elements}, 2.5f, ag::device::sim(1));
  ag::tensor x, y;
  for (long long i = 0; i < n; ++i) {
    x = a + a;
    y = b + b;
  }
  r.submitted = 2 + 2 * n;
  r.submit_s = seconds_since(t0);
  const auto xv = x.to_vector();
  const auto yv = y.to_vector();
  rt->sync();
  r.wall_s = seconds_since(t0);
  const bool x_right = check_all(r, xv, flood_elements, 3.0f, "x = a + a on sim:0");
  const bool y_right = check_all(r, yv, flood_elements, 5.0f, "y = b + b on sim:1");
  r.values_right = x_right && y_right;
  count_children(r);
  final_stats(r, *rt);
}

// Process mode, sim:0's child stopped (SIGSTOP) right after start; `n` operators on sim:1. The
// watchdog must fail sim:0 ("made no progress") and kill its child while sim:1 goes on.
void flood_stopped(report& r, probe& p, long long n) {
  ag::graph_option opt;
  opt.devices = {ag::device::sim(0), ag::device::sim(1)};
  opt.per_device_per_process = true;
  opt.progress_timeout = stopped_progress_timeout;
  r.children_expected = 1;
  std::optional<ag::runtime> rt;
  start(rt, opt);
  const pid_t stopped = runner_of_lane(1);
  if (stopped == 0)
    throw std::runtime_error("no ag-runner child of this process runs lane 1 (sim:0): none has "
                             "--lane=1 on its command line");
  if (::kill(stopped, SIGSTOP) != 0)
    throw std::runtime_error("SIGSTOP to sim:0's child (pid " + std::to_string(stopped)
                             + ") failed");
  r.rss_start_kib = status_kib("RssAnon");
  watching w{p, *rt};
  const auto t0 = clock_type::now();
  const auto a = rt->full({flood_elements}, 1.5f, ag::device::sim(0));
  const auto x = a + a; // work for the stopped child, which never runs it
  const auto b = rt->full({flood_elements}, 2.5f, ag::device::sim(1));
  ag::tensor y;
  for (long long i = 0; i < n; ++i)
    y = b + b;
  r.submitted = 3 + n;
  r.submit_s = seconds_since(t0);
  const auto yv = y.to_vector();
  r.values_right = check_all(r, yv, flood_elements, 5.0f, "y = b + b on sim:1");
  try {
    rt->sync();
    r.wrong("sync() returned although sim:0's child (pid " + std::to_string(stopped)
            + ") was stopped all along; expected ag::error \"... made no progress ...\"");
    r.values_right = false;
  } catch (const ag::error& e) {
    r.sync_error = e.what();
    if (r.sync_error.find("made no progress") == std::string::npos) {
      r.wrong("sync() threw \"" + r.sync_error + "\", expected sim:0 \"made no progress\"");
      r.values_right = false;
    }
  }
  r.wall_s = seconds_since(t0);
  // The watchdog fails the lane and asks for the kill at once; the kill itself follows.
  const auto t_error = clock_type::now();
  r.stopped_state = process_state(stopped);
  while (alive(stopped) && clock_type::now() - t_error < stopped_kill_wait)
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  r.stopped_gone_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t_error).count();
  if (alive(stopped))
    r.wrong("sim:0's stopped child (pid " + std::to_string(stopped) + ") is still alive "
            + std::to_string(stopped_kill_wait.count()) + " ms after sync() reported it killed");
  count_children(r);
  final_stats(r, *rt);
}

// Element j of upload i: small integers, so that float sums are exact; i % 5 tells uploads apart.
float upload_value(long long i, int64_t j) { return float((i + j) % 8 + i % 5); }

// `n` uploads of 1 MiB to sim:0 through a 16 MiB store, no sync between; every 100th kept, and
// their sums (and the last one's elements) checked.
void uploads(report& r, probe& p, bool process, long long n) {
  ag::graph_option opt;
  opt.devices = {ag::device::sim(0)};
  opt.per_device_per_process = process;
  opt.store_bytes = upload_store_bytes;
  r.children_expected = process ? 1 : 0;
  std::optional<ag::runtime> rt;
  start(rt, opt);
  r.rss_start_kib = status_kib("RssAnon");
  watching w{p, *rt};
  const auto t0 = clock_type::now();
  std::vector<std::pair<long long, ag::tensor>> kept;
  for (long long i = 0; i < n; ++i) {
    std::vector<float> v(static_cast<std::size_t>(upload_elements));
    for (int64_t j = 0; j < upload_elements; ++j)
      v[std::size_t(j)] = upload_value(i, j);
    auto t = rt->from_vector({upload_elements}, std::move(v), ag::device::sim(0));
    if (i % upload_keep_every == 0)
      kept.emplace_back(i, std::move(t));
  }
  r.submitted = n;
  r.submit_s = seconds_since(t0);
  std::vector<ag::tensor> sums;
  for (const auto& k : kept)
    sums.push_back(k.second.sum());
  r.submitted += (long long)sums.size();
  r.values_right = !kept.empty();
  for (std::size_t k = 0; k < kept.size(); ++k) {
    const long long i = kept[k].first;
    double want = 0;
    for (int64_t j = 0; j < upload_elements; ++j)
      want += upload_value(i, j);
    const auto got = sums[k].to_vector();
    if (got.size() != 1 || double(got[0]) != want) {
      r.wrong("sum of upload " + std::to_string(i) + " is "
              + (got.size() == 1 ? std::to_string(got[0]) : std::to_string(got.size()) + " values")
              + ", expected " + std::to_string(want));
      r.values_right = false;
    }
  }
  if (!kept.empty()) {
    const long long i = kept.back().first;
    const auto got = kept.back().second.to_vector();
    bool same = got.size() == std::size_t(upload_elements);
    for (int64_t j = 0; same && j < upload_elements; ++j)
      same = got[std::size_t(j)] == upload_value(i, j);
    if (!same) {
      r.wrong("upload " + std::to_string(i) + " read back differs from what was uploaded");
      r.values_right = false;
    }
  }
  rt->sync();
  r.wall_s = seconds_since(t0);
  count_children(r);
  final_stats(r, *rt);
}

} // namespace

const std::vector<std::string>& scenario_names() {
  static const std::vector<std::string> names{"flood-thread", "flood-process", "flood-stopped",
                                              "uploads-thread", "uploads-process"};
  return names;
}

int run_scenario(const std::string& name, const sizes& n) {
  ag::install_stop_signals(); // a parent that gives up on this process leaves no child behind
  report r;
  int code = 0;
  probe p;
  const auto t_start = clock_type::now();
  try {
    if (name == "flood-thread" || name == "flood-process") {
      r.mode = name == "flood-thread" ? "thread" : "process";
      r.iterations = n.iterations;
      flood(r, p, r.mode == "process", n.iterations);
    } else if (name == "flood-stopped") {
      r.mode = "process";
      r.iterations = n.iterations;
      flood_stopped(r, p, n.iterations);
    } else if (name == "uploads-thread" || name == "uploads-process") {
      r.mode = name == "uploads-thread" ? "thread" : "process";
      r.iterations = n.uploads;
      uploads(r, p, r.mode == "process", n.uploads);
    } else {
      r.wrong("unknown scenario \"" + name + "\"");
      code = 2;
    }
  } catch (const cannot_run& e) {
    r.wrong(e.what());
    code = 3;
  } catch (const std::exception& e) {
    r.wrong(name + ": " + e.what());
  }
  // Every runtime is destroyed here: its children must be gone.
  const auto left = runner_children();
  if (!left.empty())
    r.wrong(std::to_string(left.size()) + " ag-runner children left after the runtime was "
            + "destroyed (pid " + std::to_string(left.front()) + (left.size() > 1 ? ", ..." : "")
            + ")");
  const double total_s = seconds_since(t_start);
  p.stop();
  if (const auto why = p.stats_error(); !why.empty())
    r.wrong("runtime::stats() failed while sampling: " + why);
  if (code == 0 && !r.problems.empty())
    code = 1;

  flat_json out;
  out.add("scenario", name);
  out.add("mode", r.mode);
  out.add("iterations", r.iterations);
  out.add("submitted", r.submitted);
  out.add("dispatched", r.dispatched);
  out.add("submit_s", r.submit_s);
  out.add("wall_s", r.wall_s);
  out.add("total_s", total_s);
  out.add("ops_per_s", r.submitted > 0 && r.wall_s > 0 ? double(r.submitted) / r.wall_s : NAN);
  out.add("rss_anon_start_kib", r.rss_start_kib);
  out.add("rss_anon_peak_kib", p.peak_rss_kib());
  out.add("vm_hwm_kib", status_kib("VmHWM"));
  out.add("blocked_submits", r.blocked_submits);
  out.add("in_flight_ops_peak", p.peak_in_flight());
  out.add("children_expected", r.children_expected);
  out.add("children_alive", r.children_alive);
  out.add("children_left", static_cast<long long>(left.size()));
  out.add("values_right", r.values_right);
  if (!r.sync_error.empty()) {
    out.add("sync_error", r.sync_error);
    out.add("stopped_state", std::string(1, r.stopped_state));
    out.add("stopped_gone_ms", r.stopped_gone_ms);
  }
  std::string problems;
  for (const auto& w : r.problems)
    problems += (problems.empty() ? "" : "; ") + w;
  out.add("problems", problems);
  out.add("exit_code", code);
  std::printf("%s\n", out.str().c_str());
  std::fflush(stdout);
  return code;
}

} // namespace ag::soak
