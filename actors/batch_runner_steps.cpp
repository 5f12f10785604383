// batch_runner's steps as graphs (actors/step_cache.hpp): recording a step's calls, capturing
// them, launching the graphs of a step that binds what they were captured for.
#include <cstdint>
#include <string>
#include <utility>

#include "actors/batch_runner.hpp"
#include "cuda/kernel_stream.hpp"
#include "cuda/naive_runner.hpp"
#include "cuda/recording_stream.hpp"
#include "ipc/timeline.hpp"

namespace ag {

namespace {

// A cut's mark: the stretch that ends there copies from or to the store (recorded_call::host).
constexpr std::size_t host_mark = std::size_t{1} << 63;

// Where the stretches of `calls` end: each a run of calls of the same kind (host or not), in order.
void cut(const std::vector<recorded_call>& calls, std::vector<std::size_t>& cuts) {
  cuts.clear();
  for (std::size_t i = 0; i < calls.size(); ++i)
    if (i + 1 == calls.size() || calls[i + 1].host != calls[i].host)
      cuts.push_back((i + 1) | (calls[i].host ? host_mark : 0));
}

} // namespace

std::string batch_runner::in_graph(uint64_t step) {
  return step == 0 ? std::string{}
                   : " (in step " + std::to_string(step) + ", launched as a graph)";
}

// A step the cache keeps. Once it ran capture_after times as it is, its operators are checked and
// given memory as always, but their calls are recorded with what they bind (operand addresses,
// scalars, not the store ranges of copies): graphs of the step made for the same binding are
// launched instead, the copies from and to the store running as they are between them; else the
// calls are captured (new graphs, or the step's oldest updated in place) and those are launched.
// A capture that fails runs the calls as they are.
std::pair<uint64_t, std::string> batch_runner::run_step(const batch& b, step_cache::entry& e,
                                                        bool& as_graph) {
  if (!steps_.wants_graph(e) || failed_)
    return run_batch(b);
  calls_.clear();
  binding_.clear();
  recorder_->record(&calls_);
  runner_->bind_into(&binding_);
  auto failure = run_batch(b);
  runner_->bind_into(nullptr);
  recorder_->record(nullptr);
  if (failure.first != 0) { // an operator failed its checks: those before it run as they are
    auto ran = run_recorded(b);
    recorder_->release_deferred();
    return ran.first != 0 ? ran : failure;
  }
  cut(calls_, cuts_);
  auto* slot = steps_.match(e, binding_, cuts_);
  if (!slot) {
    auto& s = steps_.slot_for(e);
    timeline::scoped_span span{setup_.timeline.get(), pid_, track(), "capture", "graph"};
    try {
      s.ready = false;
      std::size_t from = 0, g = 0, nodes = 0;
      bool updated = true;
      std::vector<recorded_call> stretch;
      for (const auto c : cuts_) {
        const std::size_t to = c & ~host_mark;
        if ((c & host_mark) == 0) {
          stretch.assign(calls_.begin() + static_cast<std::ptrdiff_t>(from),
                         calls_.begin() + static_cast<std::ptrdiff_t>(to));
          if (g == s.graphs.size())
            s.graphs.emplace_back();
          updated = stream_->capture(stretch, s.graphs[g]) == capture_outcome::updated && updated;
          nodes += s.graphs[g++]->nodes();
        }
        from = to;
      }
      s.graphs.resize(g);
      s.binding = binding_;
      s.cuts = cuts_;
      s.ready = true;
      e.failed_captures = 0;
      ++(updated ? graph_counts_.updated : graph_counts_.instantiated);
      span.rename(updated ? "update" : "capture");
      span.add("graphs", g);
      span.add("nodes", nodes);
      slot = &s;
    } catch (const std::exception&) { // runs as it is; kept trying a few times
      ++e.failed_captures;
      ++graph_counts_.failed;
      span.rename("capture failed");
      span.close();
      auto ran = run_recorded(b);
      recorder_->release_deferred();
      return ran;
    }
  }
  auto result = launch_step(b, *slot);
  as_graph = result.first == 0;
  recorder_->release_deferred();
  return result;
}

// The stretches of a step: the copies from and to the store as recorded now, the graphs of the
// rest.
std::pair<uint64_t, std::string> batch_runner::launch_step(const batch& b,
                                                           step_cache::graph_slot& slot) {
  timeline::scoped_span span{setup_.timeline.get(), pid_, track(), "launch", "graph"};
  std::size_t from = 0, g = 0;
  for (const auto c : slot.cuts) {
    const std::size_t to = c & ~host_mark;
    if (c & host_mark) {
      if (auto ran = run_recorded(b, from, to); ran.first != 0)
        return ran;
    } else {
      try {
        stream_->launch(*slot.graphs[g++]);
        graph_step_ = b.step;
      } catch (const graph_call_error& ge) { // a call of a cpu or sim graph: its operator is known
        return {b.ops_before + ge.op + 1, ge.what() + in_graph(b.step)};
      } catch (const std::exception& ex) {
        return {b.ops_before + calls_[from].op + 1,
                "step " + std::to_string(b.step) + ": launching its CUDA graph of operators "
                  + std::to_string(calls_[from].op + 1) + " to "
                  + std::to_string(calls_[to - 1].op + 1) + " failed: " + ex.what()};
      }
    }
    from = to;
  }
  ++graph_counts_.launched;
  span.add("graphs", g);
  return {0, {}};
}

// The calls [from, to) recorded for b's operators, run as they are (in order, up to the first that
// fails).
std::pair<uint64_t, std::string> batch_runner::run_recorded(const batch& b, std::size_t from,
                                                            std::size_t to) {
  for (std::size_t i = from; i < calls_.size() && i < to; ++i) {
    try {
      calls_[i].run(*stream_);
    } catch (const std::exception& ex) {
      return {b.ops_before + calls_[i].op + 1, ex.what()};
    }
  }
  return {0, {}};
}

} // namespace ag
