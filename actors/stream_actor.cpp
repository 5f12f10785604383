#include "actors/stream_actor.hpp"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <caf/all.hpp>

#include "actors/protocol.hpp"
#include "actors/store_fence.hpp"
#include "cuda/kernel_stream.hpp"
#include "cuda/naive_runner.hpp"
#include "graph/op.hpp"
#include "ipc/timeline.hpp"

namespace ag {

namespace {

// Launched but unconfirmed operators after which a stream synchronizes and acknowledges even while
// more batches wait: acknowledgements free host-store ranges and answer waits.
constexpr uint64_t max_unconfirmed_ops = 4096;
// Likewise for bytes copied from or to the host store: the executor frees the staging of uploads
// and moves only once they are acknowledged, and a store of S bytes must not fill up with ranges
// that wait for nothing but an acknowledgement. An eighth of the store per runner.
constexpr uint64_t store_share = 8;

struct stream_state {
  runner_answers_actor executor;
  uint32_t lane = 0;
  device dev;
  std::unique_ptr<kernel_stream> stream;
  std::unique_ptr<naive_runner> runner; // declared after stream: destroyed before it
  bool failed = false;
  std::shared_ptr<ag::timeline> timeline;
  int pid = 0;
  // Batches whose operators are launched but not yet confirmed finished: (ops_after, device bytes
  // live after the batch), acknowledged in order once the stream is synchronized.
  struct pending_ack {
    uint64_t ops_after;
    uint64_t live;
  };
  std::vector<pending_ack> pending;
  uint64_t ops_unconfirmed = 0;
  uint64_t host_bytes_unconfirmed = 0; // copied from or to the store since the last acknowledgement
  uint64_t host_bytes_budget = 0;

  // This lane's timeline track in its process: track 0 is the executor's in the controller.
  int track() const noexcept { return static_cast<int>(lane) + 1; }

  static inline const char* name = "ag.stream";
};

using stream_self = stream_actor::stateful_pointer<stream_state>;

// When each no-hold operand of a batch can go: (id, 1 + the index of the last operator that uses
// it, or 0 when none does), in that order. Releasing each as soon as its last user has run, not
// after the whole batch, lets the next operator reuse its memory: a batch of thousands of adds
// then needs the memory of a few, not of all of them.
std::vector<std::pair<operand_id, std::size_t>> release_points(const batch& b) {
  // Sorted by id while the last users are found: one allocation per batch, a binary search per
  // operand reference.
  std::vector<std::pair<operand_id, std::size_t>> last;
  if (b.no_hold.empty())
    return last;
  last.reserve(b.no_hold.size());
  for (auto id : b.no_hold)
    last.emplace_back(id, 0);
  std::sort(last.begin(), last.end());
  for (std::size_t i = 0; i < b.ops.size(); ++i)
    for (const auto* ref : {&b.ops[i].a, &b.ops[i].b, &b.ops[i].out}) {
      if (ref->id == 0 || ref->on_host())
        continue;
      auto it = std::lower_bound(last.begin(), last.end(), std::pair{ref->id, std::size_t{0}});
      for (; it != last.end() && it->first == ref->id; ++it)
        it->second = i + 1;
    }
  std::stable_sort(last.begin(), last.end(),
                   [](const auto& x, const auto& y) { return x.second < y.second; });
  return last;
}

// Confirms the first `count` pending batches: synchronizes the stream (a no-op on cpu and sim),
// then acknowledges each; with `always`, synchronizes even when count is 0. An asynchronous
// failure is reported against the last operator launched so far (which one failed, the stream
// does not say).
void acknowledge(stream_self self, std::size_t count, bool always = false) {
  auto& st = self->state;
  if (count == 0 && !always)
    return;
  timeline::scoped_span span{st.timeline.get(), st.pid, st.track(), "synchronize", "batch"};
  if (!st.failed) {
    try {
      st.stream->synchronize();
      store_fence::release(); // what the stream wrote and read is the executor's again
    } catch (const std::exception& e) {
      st.failed = true;
      self->send(st.executor, failed_atom::value, st.lane, st.pending.back().ops_after,
                 st.dev.str() + ": " + e.what());
    }
  }
  span.add("batches", count);
  span.close();
  for (std::size_t i = 0; i < count; ++i)
    self->send(st.executor, done_atom::value, st.lane, st.pending[i].ops_after,
               st.pending[i].live);
  st.pending.erase(st.pending.begin(), st.pending.begin() + static_cast<std::ptrdiff_t>(count));
  st.ops_unconfirmed = 0;
  st.host_bytes_unconfirmed = 0;
}

// Runs batch b's operators in order (none once the lane failed), releasing each no-hold operand
// after its last user; returns the index of the operator that failed and why, or {0, ""}.
std::pair<uint64_t, std::string> run_batch(stream_state& st, const batch& b) {
  const auto releases = release_points(b);
  std::size_t released = 0;
  auto release_through = [&](std::size_t op_index) {
    for (; released < releases.size() && releases[released].second <= op_index; ++released)
      st.runner->release(releases[released].first);
  };
  release_through(0); // operands no operator of this batch uses
  std::pair<uint64_t, std::string> failure{0, {}};
  for (std::size_t i = 0; i < b.ops.size() && !st.failed && failure.first == 0; ++i) {
    const uint64_t index = b.ops_before + i + 1;
    try {
      timeline::scoped_span op_span{st.timeline.get(), st.pid, st.track(), {}, "op"};
      st.runner->run(b.ops[i]);
      if (op_span) {
        op_span.rename(describe(b.ops[i]));
        op_span.add("index", index);
      }
    } catch (const std::exception& e) {
      failure = {index, e.what()};
    }
    release_through(i + 1);
  }
  release_through(b.ops.size());
  return failure;
}

// One batch: run, then acknowledge (at once on a failure; else once the mailbox is empty or
// enough is unconfirmed).
void on_execute(stream_self self, const batch& b) {
  store_fence::acquire(); // the uploads the executor stored for this batch
  auto& st = self->state;
  timeline::scoped_span batch_span{st.timeline.get(), st.pid, st.track(), "batch", "batch"};
  const auto [failed_at, failure] = run_batch(st, b);
  batch_span.add("operators", b.ops.size());
  batch_span.add("released", b.no_hold.size());
  batch_span.add("ops_after", b.ops_after());
  batch_span.close();
  st.pending.push_back({b.ops_after(), static_cast<uint64_t>(st.runner->live_bytes())});
  st.ops_unconfirmed += b.ops.size();
  for (const auto& op : b.ops)
    if (op.kind == op_kind::copy && (op.a.on_host() || op.out.on_host()))
      st.host_bytes_unconfirmed += op.count * sizeof(float);
  if (failed_at != 0) {
    // What was launched before the failing operator, this batch's first ones included,
    // finishes before anything is acknowledged: the executor frees store ranges on a failure.
    acknowledge(self, st.pending.size() - 1, true);
    if (!st.failed) { // unless that synchronize failed already
      st.failed = true;
      self->send(st.executor, failed_atom::value, st.lane, failed_at,
                 st.dev.str() + ": " + failure);
    }
    acknowledge(self, st.pending.size());
  } else if (self->mailbox().empty() || st.ops_unconfirmed >= max_unconfirmed_ops
             || st.host_bytes_unconfirmed >= st.host_bytes_budget) {
    acknowledge(self, st.pending.size());
  }
}

stream_actor::behavior_type stream_behavior(stream_self self, runner_answers_actor executor,
                                            uint32_t lane, device dev, std::byte* store_base,
                                            std::size_t store_size, bool pin_store,
                                            std::shared_ptr<ag::timeline> tl) {
  auto& st = self->state;
  st.executor = std::move(executor);
  st.lane = lane;
  st.dev = dev;
  st.timeline = std::move(tl);
  st.pid = static_cast<int>(::getpid());
  if (st.timeline)
    st.timeline->name_track(st.pid, st.track(), dev.str());
  st.host_bytes_budget = std::max<uint64_t>(store_size / store_share, 1);
  try {
    st.stream = make_stream(dev);
    if (pin_store)
      st.stream->register_host(store_base, store_size);
    st.runner = std::make_unique<naive_runner>(*st.stream, store_base, store_size);
  } catch (const std::exception& e) {
    self->quit(make_error(errc::device_failed, dev.str() + ": cannot start: " + e.what()));
    return stream_actor::behavior_type::make_empty_behavior();
  }
  self->send(st.executor, ready_atom::value, lane);
  return {
    [=](execute_atom, const batch& b) { on_execute(self, b); },
  };
}

} // namespace

stream_actor spawn_stream_actor(caf::actor_system& sys, runner_answers_actor report_to,
                                uint32_t lane, device dev, std::byte* store_base,
                                std::size_t store_size, bool pin_store,
                                std::shared_ptr<ag::timeline> timeline) {
  return sys.spawn<caf::detached>(stream_behavior, std::move(report_to), lane, dev, store_base,
                                  store_size, pin_store, std::move(timeline));
}

} // namespace ag
