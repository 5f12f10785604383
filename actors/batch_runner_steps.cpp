// batch_runner's steps as graphs (actors/step_cache.hpp): recording a step's calls, capturing
// them, launching the graphs of a step that binds what they were captured for.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

#include "actors/batch_runner.hpp"
#include "cuda/kernel_stream.hpp"
#include "cuda/naive_runner.hpp"
#include "cuda/recording_stream.hpp"
#include "graph/step_shape.hpp"
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
// A capture that fails runs the calls as they are. The first recording also keeps what the
// operators did with their operands (step_cache::entry::effects): from then on a run that fits
// them does that in their place (run_prepared).
batch_runner::outcome batch_runner::run_step(const batch& b, step_cache::entry& e,
                                             bool& as_graph) {
  if (!steps_.wants_graph(e) || failed_)
    return run_batch(b);
  const bool learn = e.effects.empty();
  calls_.clear();
  binding_.clear();
  effects_.clear();
  recorder_->record(&calls_);
  runner_->bind_into(&binding_);
  if (learn)
    runner_->effects_into(&effects_);
  auto failure = run_batch(b);
  const bool complete = runner_->complete();
  runner_->effects_into(nullptr);
  runner_->bind_into(nullptr);
  recorder_->record(nullptr);
  if (failure.first != 0) { // an operator failed its checks: those before it run as they are
    auto ran = run_recorded(b, calls_);
    recorder_->release_deferred();
    return ran.first != 0 ? ran : failure;
  }
  if (learn && complete) {
    // Which create made each operand a lookup reads, by this run's ids.
    std::unordered_map<operand_id, uint32_t> made;
    for (std::size_t k = 0; k < effects_.size(); ++k) {
      auto& f = effects_[k];
      const auto id = operand_of(b.ops[f.op], f.field).id;
      if (f.kind == operand_effect::what::create)
        made[id] = static_cast<uint32_t>(k + 1);
      else if (auto it = made.find(id); f.kind == operand_effect::what::lookup && it != made.end())
        f.made_by = it->second;
    }
    e.effects = std::move(effects_);
  }
  return capture_and_launch(b, e, as_graph, true);
}

// Whether every call of `calls` between the graphs copies its operator's own store range (`a`
// read, `out` written): a prepared run sets those ranges to its own operators'.
bool batch_runner::patchable(const batch& b, const std::vector<recorded_call>& calls) const {
  for (const auto& c : calls) {
    if (!c.host)
      continue;
    const auto* x = std::get_if<recorded_call::copy_args>(&c.call);
    if (!x || c.op >= b.op_count())
      return false;
    if ((x->dst_on_host && x->dst != setup_.store_base + operand_at(b, c.op, 0).offset)
        || (x->src_on_host && x->src != setup_.store_base + operand_at(b, c.op, 1).offset))
      return false;
  }
  return true;
}

batch_runner::outcome batch_runner::capture_and_launch(const batch& b, step_cache::entry& e,
                                                       bool& as_graph, bool match) {
  cut(calls_, cuts_);
  auto* slot = match ? steps_.match(e, binding_, &cuts_) : nullptr;
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
      s.calls = calls_;
      s.patchable = patchable(b, calls_);
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
      auto ran = run_recorded(b, calls_);
      recorder_->release_deferred();
      return ran;
    }
  }
  auto result = launch_step(b, *slot, calls_);
  as_graph = result.first == 0;
  recorder_->release_deferred();
  return result;
}

// A run of step e that fits its effects: the same operands looked up (of the same sizes), created
// and let go of in the same order as its operators would, without their checks, which held for
// the same shapes before. Its binding is then the one its operators would bind: the graphs made
// for it are launched, with the store ranges of b's copies between them. A binding without graphs
// (new scalars, addresses) has b's operators run over what was made for them (naive_runner::
// prebound), recorded, and captured. Nothing is done when an operand is not there to look up,
// is there to create, or lies outside the store: b then runs as any step does, and fails where
// its operators say.
std::optional<batch_runner::outcome> batch_runner::run_prepared(const batch& b,
                                                                step_cache::entry& e,
                                                                bool& as_graph) {
  using what = operand_effect::what;
  const std::size_t ops = b.op_count();
  created_.clear();
  for (const auto& f : e.effects) {
    if (f.op >= ops)
      return std::nullopt;
    const operand_ref r = operand_at(b, f.op, f.field);
    const bool on_device = r.id != 0 && !r.on_host();
    switch (f.kind) {
      case what::scalars: break;
      case what::host:
        if (!r.on_host() || r.offset > setup_.store_size || f.bytes > setup_.store_size - r.offset)
          return std::nullopt;
        break;
      case what::lookup:
        if (!on_device)
          return std::nullopt;
        if (f.made_by != 0) { // the operand a create of this step made, as when recorded
          const auto& maker = e.effects[f.made_by - 1];
          if (operand_at(b, maker.op, maker.field).id != r.id)
            return std::nullopt;
        } else if (!runner_->find(r.id, f.bytes)) {
          return std::nullopt;
        }
        break;
      case what::create:
        if (!on_device || runner_->holds(r.id))
          return std::nullopt;
        created_.push_back(r.id);
        break;
    }
  }
  std::sort(created_.begin(), created_.end());
  if (std::adjacent_find(created_.begin(), created_.end()) != created_.end())
    return std::nullopt; // an operand made twice: its operators say so
  timeline::scoped_span span{setup_.timeline.get(), pid_, track(), "prepared", "graph"};
  // What is let go of may be handed out again at once, in stream order, as when the operators
  // run; not back to the host before the graphs that read it ran.
  recorder_->hold_frees(true);
  binding_.clear();
  const auto releases = release_points(b);
  std::size_t released = 0;
  auto retire_through = [&](std::size_t op_index) {
    for (; released < releases.size() && releases[released].second <= op_index; ++released)
      runner_->retire(releases[released].first);
  };
  retire_through(0);
  std::size_t k = 0;
  for (std::size_t i = 0; i < ops; ++i) {
    for (; k < e.effects.size() && e.effects[k].op == i; ++k) {
      const auto& f = e.effects[k];
      const operand_ref r = operand_at(b, i, f.field);
      void* p = nullptr;
      switch (f.kind) {
        case what::scalars: {
          uint64_t words[4];
          scalars_at(b, i, words);
          binding_.insert(binding_.end(), std::begin(words), std::end(words));
          continue;
        }
        case what::host: p = setup_.store_base + r.offset; break;
        case what::lookup: p = runner_->find(r.id, f.bytes); break;
        case what::create: p = runner_->create(r.id, f.bytes); break;
      }
      if (f.bound)
        binding_.push_back(reinterpret_cast<uintptr_t>(p));
    }
    retire_through(i + 1);
  }
  auto* slot = steps_.match(e, binding_, nullptr);
  if (slot && slot->patchable) {
    for (auto& c : slot->calls)
      if (c.host) {
        auto& x = std::get<recorded_call::copy_args>(c.call);
        if (x.dst_on_host)
          x.dst = setup_.store_base + operand_at(b, c.op, 0).offset;
        if (x.src_on_host)
          x.src = setup_.store_base + operand_at(b, c.op, 1).offset;
      }
    span.close();
    runner_->bury();
    auto result = launch_step(b, *slot, slot->calls);
    as_graph = result.first == 0;
    graph_counts_.prepared += as_graph ? 1 : 0;
    recorder_->release_deferred();
    return result;
  }
  span.rename("prepared, new binding");
  span.close();
  batch storage; // b's operators run: made whole when it came as shape and values
  const batch& full = whole(b, storage);
  calls_.clear();
  binding_.clear();
  recorder_->record(&calls_);
  runner_->bind_into(&binding_);
  runner_->prebound(true);
  auto failure = run_batch(full, false);
  runner_->prebound(false);
  runner_->bind_into(nullptr);
  recorder_->record(nullptr);
  runner_->bury();
  if (failure.first != 0) {
    auto ran = run_recorded(full, calls_);
    recorder_->release_deferred();
    return ran.first != 0 ? ran : failure;
  }
  return capture_and_launch(full, e, as_graph, false);
}

// The stretches of a step: the copies from and to the store as recorded now, the graphs of the
// rest.
batch_runner::outcome batch_runner::launch_step(const batch& b, step_cache::graph_slot& slot,
                                                const std::vector<recorded_call>& calls) {
  timeline::scoped_span span{setup_.timeline.get(), pid_, track(), "launch", "graph"};
  std::size_t from = 0, g = 0;
  for (const auto c : slot.cuts) {
    const std::size_t to = c & ~host_mark;
    if (c & host_mark) {
      if (auto ran = run_recorded(b, calls, from, to); ran.first != 0)
        return ran;
    } else {
      try {
        stream_->launch(*slot.graphs[g++]);
        graph_step_ = b.step;
      } catch (const graph_call_error& ge) { // a call of a cpu or sim graph: its operator is known
        return {b.ops_before + ge.op + 1, ge.what() + in_graph(b.step)};
      } catch (const std::exception& ex) {
        return {b.ops_before + calls[from].op + 1,
                "step " + std::to_string(b.step) + ": launching its CUDA graph of operators "
                  + std::to_string(calls[from].op + 1) + " to "
                  + std::to_string(calls[to - 1].op + 1) + " failed: " + ex.what()};
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
batch_runner::outcome batch_runner::run_recorded(const batch& b,
                                                 const std::vector<recorded_call>& calls,
                                                 std::size_t from, std::size_t to) {
  for (std::size_t i = from; i < calls.size() && i < to; ++i) {
    try {
      calls[i].run(*stream_);
    } catch (const std::exception& ex) {
      return {b.ops_before + calls[i].op + 1, ex.what()};
    }
  }
  return {0, {}};
}

} // namespace ag
