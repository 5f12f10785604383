#include "actors/batch_runner.hpp"
#include "actors/operator_mark.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <utility>

#include <unistd.h>

#include "actorgraph/error.hpp"
#include "actors/lane_streams.hpp"
#include "actors/store_fence.hpp"
#include "cuda/kernel_stream.hpp"
#include "cuda/naive_runner.hpp"
#include "cuda/recording_stream.hpp"
#include "graph/step_shape.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/timeline.hpp"

namespace ag {

namespace {

// Launched but unconfirmed operators after which a runner synchronizes and acknowledges even while
// more batches wait: acknowledgements free host-store ranges and answer waits.
constexpr uint64_t max_unconfirmed_ops = 4096;
// Likewise for bytes copied from or to the host store: the executor frees the staging of uploads
// and moves only once they are acknowledged, and a store of S bytes must not fill up with ranges
// that wait for nothing but an acknowledgement. An eighth of the store per runner.
constexpr uint64_t store_share = 8;

// While it lasts, the board shows the operator (or synchronize) the runner is inside, and so does
// the runner's mark for its child's main thread (which beats the heartbeat while it is set, and
// on the sockets pulses it to the controller): the controller's watchdog counts a child busy
// there as making progress as long as the child's heartbeat goes on, though it reads nothing
// meanwhile.
class running_mark {
public:
  running_mark(const batch_runner_setup& s, uint64_t index) noexcept
    : board_(s.board), lane_(s.lane), mark_(s.running) {
    if (board_)
      board_->running(lane_, index);
    if (mark_)
      mark_->enter(index);
  }
  ~running_mark() {
    if (board_)
      board_->running(lane_, 0);
    if (mark_)
      mark_->leave();
  }
  running_mark(const running_mark&) = delete;
  running_mark& operator=(const running_mark&) = delete;

private:
  completion_board* board_;
  uint32_t lane_;
  operator_mark* mark_;
};

} // namespace

// When each no-hold operand of a batch can go: (id, 1 + the index of the last operator that uses
// it, or 0 when none does), in that order. Releasing each as soon as its last user has run, not
// after the whole batch, lets the next operator reuse its memory: a batch of thousands of adds
// then needs the memory of a few, not of all of them.
std::vector<std::pair<operand_id, std::size_t>> batch_runner::release_points(const batch& b) {
  // Sorted by id while the last users are found: one allocation per batch, a binary search per
  // operand reference.
  std::vector<std::pair<operand_id, std::size_t>> last;
  if (b.no_hold.empty())
    return last;
  last.reserve(b.no_hold.size());
  for (auto id : b.no_hold)
    last.emplace_back(id, 0);
  std::sort(last.begin(), last.end());
  for (std::size_t i = 0; i < b.op_count(); ++i) {
    // A peer_sum names what it reads in its group (in the store), not in its fields: nothing of
    // the batch goes before it.
    if (op_at(b, i).kind == op_kind::peer_sum)
      for (auto& l : last)
        l.second = i + 1;
    for (unsigned field : {1u, 2u, 3u, 0u}) {
      const operand_ref ref = operand_at(b, i, field);
      if (ref.id == 0 || ref.on_host())
        continue;
      auto it = std::lower_bound(last.begin(), last.end(), std::pair{ref.id, std::size_t{0}});
      for (; it != last.end() && it->first == ref.id; ++it)
        it->second = i + 1;
    }
  }
  std::stable_sort(last.begin(), last.end(),
                   [](const auto& x, const auto& y) { return x.second < y.second; });
  return last;
}

batch_runner::batch_runner(batch_runner_setup setup, runner_answers& out)
  : setup_(std::move(setup)), out_(out), steps_(setup_.steps),
    pid_(static_cast<int>(::getpid())), entries_(setup_.entries_before) {
  if (setup_.timeline)
    setup_.timeline->name_track(pid_, track(), setup_.dev.str());
  host_bytes_budget_ = std::max<uint64_t>(setup_.store_size / store_share, 1);
  stream_ = make_stream(setup_.dev);
  if (setup_.streams)
    setup_.streams->add(setup_.lane, stream_);
  if (setup_.pin_store)
    stream_->register_host(setup_.store_base, setup_.store_size);
  auto exports = setup_.exports;
  if (setup_.board) // another lane's await may wait for what this one ran
    exports.before_sleep = [this] { publish_before(running_index_, running_launched_); };
  recorder_ = std::make_unique<recording_stream>(*stream_);
  runner_ = std::make_unique<naive_runner>(*recorder_, setup_.store_base, setup_.store_size,
                                           setup_.lane, setup_.peers.get(), std::move(exports),
                                           setup_.streams != nullptr);
}

// A share of its memory may keep the stream past the runtime, and the store's mapping with it:
// the store is unregistered now, once the runner gave its operands back.
batch_runner::~batch_runner() {
  if (setup_.streams) // first: no share takes the stream from now on
    setup_.streams->remove(setup_.lane);
  if (runner_ && stream_.use_count() > 1) // shared: the memory stays until the stream goes
    runner_->abandon();
  runner_.reset();
  if (stream_ && setup_.pin_store)
    stream_->unregister_host(setup_.store_base);
}

// Marks the lane failed (on the board first: what is acknowledged after it must not read as
// success) and reports it.
void batch_runner::fail(uint64_t index, const std::string& what) {
  failed_ = true;
  if (setup_.board)
    setup_.board->failed(setup_.lane, index);
  out_.failed(setup_.lane, index, setup_.dev.str() + ": " + what);
}

// Confirms the first `count` pending batches: synchronizes the stream (a no-op on cpu and sim),
// then acknowledges each; with `always`, synchronizes even when count is 0. An asynchronous
// failure is reported against the last operator launched so far (which one failed, the stream
// does not say).
void batch_runner::acknowledge(std::size_t count, bool always) {
  if (count == 0 && !always)
    return;
  timeline::scoped_span span{setup_.timeline.get(), pid_, track(), "synchronize", "batch"};
  if (!failed_ && launched_) { // a batch of releases alone launched nothing to wait for
    try {
      launched_ = false;
      const uint64_t last = pending_.empty() ? 0 : pending_.back().ops_after;
      const running_mark mark{setup_, std::max<uint64_t>(last, 1)};
      stream_->synchronize();
      store_fence::release(); // what the stream wrote and read is the executor's again
    } catch (const std::exception& e) {
      fail(pending_.back().ops_after, e.what() + in_graph(graph_step_));
    }
    graph_step_ = 0;
  }
  span.add("batches", count);
  span.close();
  for (std::size_t i = 0; i < count; ++i) {
    if (setup_.board)
      setup_.board->completed(setup_.lane, pending_[i].ops_after, pending_[i].entries_after);
    out_.done(setup_.lane, pending_[i].ops_after, pending_[i].entries_after, pending_[i].live);
  }
  if (setup_.board && count > 0)
    setup_.board->notify();
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(count));
  ops_unconfirmed_ = 0;
  host_bytes_unconfirmed_ = 0;
}

// Runs batch b's operators in order (none once the lane failed), releasing each no-hold operand
// after its last user; returns the index of the operator that failed and why, or {0, ""}.
batch_runner::outcome batch_runner::run_batch(const batch& b, bool release) {
  const auto releases = release ? release_points(b) : decltype(release_points(b)){};
  std::size_t released = 0;
  auto release_through = [&](std::size_t op_index) {
    for (; released < releases.size() && releases[released].second <= op_index; ++released)
      runner_->release(releases[released].first);
  };
  release_through(0); // operands no operator of this batch uses
  std::pair<uint64_t, std::string> failure{0, {}};
  bool launched = false; // operators of this batch launched on the stream
  for (std::size_t i = 0; i < b.ops.size() && !failed_ && failure.first == 0; ++i) {
    const uint64_t index = b.ops_before + i + 1;
    try {
      // A recorded step's operators only record their calls: the step is one span.
      timeline::scoped_span op_span{recorder_->recording() ? nullptr : setup_.timeline.get(), pid_,
                                    track(), {}, "op"};
      recorder_->at(i);
      runner_->at(i);
      if (b.ops[i].kind == op_kind::await) {
        await_lane(b.ops[i], index, launched);
        launched = false;
      } else {
        const running_mark mark{setup_, index};
        running_index_ = index;
        running_launched_ = launched;
        runner_->run(b.ops[i]);
        launched = true;
      }
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

// Operator `index` is an await: the operators before it are published on the board (another
// lane may be waiting for them), then the runner waits there until lane op.k acknowledged its
// operator op.m. A lane that failed, or the runtime's end, ends the wait too: what follows then
// reads what that lane never wrote, and the controller taints it. Each stretch of wait_timeout in
// which the awaited lane shows no sign of progress (no operator acknowledged or started, no
// heartbeat) fails the await.
void batch_runner::await_lane(const op_desc& op, uint64_t index, bool launched) {
  auto* board = setup_.board;
  if (!board)
    throw error(describe(op) + ": no completion board to wait on (the shared-memory path sends "
                               "awaits; a replay elsewhere cannot run them)");
  if (op.k == setup_.lane || op.k >= board->lanes())
    throw error(describe(op) + ": lane " + std::to_string(op.k) + " is not another lane of the "
                + std::to_string(board->lanes()) + " on the board");
  if (board->ops(op.k) >= op.m || board->lane_failed(op.k)) {
    // Nothing to wait for (an await emptied for a stand-in awaits operator 0): the runner does
    // not block, so nothing needs publishing before it.
    launched_ = launched_ || launched;
    store_fence::acquire();
    return;
  }
  publish_before(index, launched);
  if (failed_) // its stream failed: the lane runs nothing more
    return;
  const running_mark mark{setup_, index};
  using clock = std::chrono::steady_clock;
  const auto timeout = setup_.exports.timeout;
  auto deadline_from = [&](clock::time_point t) {
    return timeout == std::chrono::milliseconds::max() || timeout > clock::time_point::max() - t
             ? clock::time_point::max()
             : t + timeout;
  };
  auto signs = [&] {
    return std::array{board->ops(op.k), board->running_at(op.k), board->beats(op.k)};
  };
  auto seen = signs();
  for (auto deadline = deadline_from(clock::now());;) {
    const auto outcome = board->await_op(op.k, op.m, deadline,
                                          {setup_.exports.spin, board->seat(setup_.lane)});
    if (outcome != completion_board::await_outcome::timed_out)
      break;
    if (const auto now = signs(); now != seen) {
      seen = now;
      deadline = deadline_from(clock::now());
      continue;
    }
    throw error(describe(op) + ": that lane showed no progress for "
                + std::to_string(timeout.count()) + " ms (graph_option::wait_timeout)");
  }
  store_fence::acquire(); // what the awaited lane wrote before it counted its operator
}

// Confirms every batch before this one and publishes on the board that the operators of this
// batch before `index` ran (synchronizing the stream first when some were launched). Before the
// runner blocks inside operator `index` (an await, a read of an export not yet written): another
// lane may be waiting for those operators.
void batch_runner::publish_before(uint64_t index, bool launched) {
  if (launched)
    launched_ = true;
  if (!pending_.empty()) {
    acknowledge(pending_.size()); // synchronizes, this batch's launches included
  } else if (launched_) {
    launched_ = false;
    const running_mark mark{setup_, index - 1};
    stream_->synchronize(); // throws: the await fails, as the operator that was launched last
    store_fence::release();
  }
  if (failed_)
    return;
  setup_.board->completed(setup_.lane, index - 1, entries_);
  setup_.board->notify_awaits(); // a user's thread in sync() sleeps on until the batch is done
  setup_.board->running(setup_.lane, index); // still inside it
}

void batch_runner::execute(const batch& b, bool more_waiting) {
  store_fence::acquire(); // the uploads the executor stored for this batch
  timeline::scoped_span batch_span{setup_.timeline.get(), pid_, track(), "batch", "batch"};
  auto* step = steps_.see(b);
  bool as_graph = false;
  std::optional<outcome> ran;
  if (step && steps_.wants_graph(*step) && !failed_ && !step->effects.empty()
      && !step->graphs.empty())
    ran = run_prepared(b, *step, as_graph);
  if (!ran) { // its operators run: a batch that came as shape and values is made whole
    batch storage;
    const batch& full = whole(b, storage);
    ran = step ? run_step(full, *step, as_graph) : run_batch(full);
  }
  const auto [failed_at, failure] = *ran;
  if (b.step != 0 && batch_span)
    batch_span.rename(as_graph ? "step " + std::to_string(b.step) + " (graph)"
                               : "step " + std::to_string(b.step));
  const std::size_t ops = b.op_count();
  batch_span.add("operators", ops);
  batch_span.add("released", b.no_hold.size());
  batch_span.add("ops_after", b.ops_after());
  batch_span.close();
  entries_ += ops + b.no_hold.size();
  launched_ = launched_ || ops != 0;
  pending_.push_back({b.ops_after(), entries_, static_cast<uint64_t>(runner_->live_bytes())});
  ops_unconfirmed_ += ops;
  for (std::size_t i = 0; i < ops; ++i)
    if (const auto& op = op_at(b, i); op.kind == op_kind::copy
                                      && (operand_at(b, i, 0).on_host() || operand_at(b, i, 1).on_host()))
      host_bytes_unconfirmed_ += op.count * size_of(op.type);
  if (failed_at != 0) {
    // What was launched before the failing operator, this batch's first ones included,
    // finishes before anything is acknowledged: the executor frees store ranges on a failure.
    acknowledge(pending_.size() - 1, true);
    if (!failed_) // unless that synchronize failed already
      fail(failed_at, failure);
    acknowledge(pending_.size());
  } else if (!more_waiting || ops_unconfirmed_ >= max_unconfirmed_ops
             || host_bytes_unconfirmed_ >= host_bytes_budget_) {
    acknowledge(pending_.size());
  }
}

void batch_runner::confirm() { acknowledge(pending_.size()); }

} // namespace ag
