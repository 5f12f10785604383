// batch_runner: what a device's runner does, without actors (the stream actor in thread mode and
// in a child on the socket path, the ring reader of a child on the shared-memory path). Runs each
// batch in order on its kernel stream, releases the batch's no-hold operands after their last
// users, waits at each await operator for another lane's count on the board (having published its
// own progress first), and confirms the batches launched since the last synchronize: it synchronizes the stream
// and acknowledges each, with the device bytes live after it, to its answers and, when it has
// one, on the completion board (marking its lane failed there before it publishes what followed a
// failure; showing there which operator or synchronize it is inside). Its owner calls confirm() once no further batch waits; it confirms by itself after a
// failure, after 4096 unconfirmed operators, or after copies of an eighth of the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <string>
#include <vector>

#include "actorgraph/device.hpp"
#include "actors/step_cache.hpp"
#include "cuda/naive_runner.hpp"
#include "cuda/export_wait.hpp"
#include "graph/op.hpp"

namespace ag {

class completion_board;
class kernel_stream;
class operator_mark;
class lane_streams;
class naive_runner;
class peer_directory;
class recording_stream;
class timeline;

// Where a runner's acknowledgements go (a CAF actor behind it: the executor, a child's pusher).
class runner_answers {
public:
  virtual ~runner_answers() = default;
  virtual void done(uint32_t lane, uint64_t ops_done, uint64_t entries, uint64_t device_live) = 0;
  virtual void failed(uint32_t lane, uint64_t index, std::string what) = 0;
};

struct batch_runner_setup {
  uint32_t lane = 0;
  device dev;
  std::byte* store_base = nullptr;
  std::size_t store_size = 0;
  bool pin_store = false; // a CUDA stream registers the store (copies at pinned-memory speed)
  std::shared_ptr<ag::timeline> timeline; // spans of batches, operators and synchronizes
  completion_board* board = nullptr;      // null: the answers alone
  // The operands of this process's peer lanes (direct transfers); null: none.
  std::shared_ptr<peer_directory> peers;
  // How a read of another child's export waits for it (cuda/export_wait.hpp).
  export_wait_policy exports;
  // A lane of the controller's process (thread mode): its stream is added here, and its exports
  // are read in this process (by peer lanes and by the user's threads, tensor::device_bytes), so
  // they name the operand's address. Null: a child's lane.
  std::shared_ptr<lane_streams> streams;
  // Steps that repeat, as graphs (graph_option::cuda_graphs).
  step_policy steps;
  // A child's: where its main thread sees which operator (or synchronize) the runner is inside,
  // to beat or pulse the heartbeat while one runs (actors/operator_mark.hpp). Null: none.
  operator_mark* running = nullptr;
  // The entries its lane acknowledged before this runner (a child started in place of a dead
  // one): its count goes on from there.
  uint64_t entries_before = 0;
};

// What a runner did with the steps it saw (batch_runner::graphs).
struct graph_counts {
  uint64_t launched = 0;     // steps launched as a graph
  uint64_t instantiated = 0; // graphs made
  uint64_t updated = 0;      // graphs updated in place for another binding
  uint64_t failed = 0;       // captures that failed (the step then ran operator by operator)
  uint64_t prepared = 0;     // launched without running its operators (run_prepared)
};

class batch_runner {
public:
  // Creates the stream; throws ag::error naming the device when it cannot.
  batch_runner(batch_runner_setup setup, runner_answers& out);
  ~batch_runner();
  batch_runner(const batch_runner&) = delete;
  batch_runner& operator=(const batch_runner&) = delete;

  // Runs batch b (nothing once the lane failed). more_waiting: another batch is already there, so
  // that confirming can wait for it (unless enough is unconfirmed).
  void execute(const batch& b, bool more_waiting);
  // Confirms every batch launched so far.
  void confirm();
  bool unconfirmed() const noexcept { return !pending_.empty(); }
  const graph_counts& graphs() const noexcept { return graph_counts_; }

private:
  struct pending_ack {
    uint64_t ops_after;
    uint64_t entries_after;
    uint64_t live;
  };
  using outcome = std::pair<uint64_t, std::string>; // the operator that failed and why, or 0
  // When each no-hold operand of b can go: (id, 1 + the index of its last user in b, or 0).
  static std::vector<std::pair<operand_id, std::size_t>> release_points(const batch& b);
  // release: the no-hold operands go after their last users (not when a prepared run let them
  // go already).
  outcome run_batch(const batch& b, bool release = true);
  outcome run_step(const batch& b, step_cache::entry& e, bool& as_graph);
  // A step whose effects are known, run without its operators (batch_runner_steps.cpp); nothing
  // (and nothing done) when b does not fit them.
  std::optional<outcome> run_prepared(const batch& b, step_cache::entry& e, bool& as_graph);
  // calls_, binding_ recorded for b: launched as the graphs of their binding, captured first
  // when e has none (`match`: look for one).
  outcome capture_and_launch(const batch& b, step_cache::entry& e, bool& as_graph, bool match);
  bool patchable(const batch& b, const std::vector<recorded_call>& calls) const;
  outcome run_recorded(const batch& b, const std::vector<recorded_call>& calls,
                       std::size_t from = 0, std::size_t to = SIZE_MAX);
  outcome launch_step(const batch& b, step_cache::graph_slot& slot,
                      const std::vector<recorded_call>& calls);
  // Where an asynchronous failure was: in a step launched as graphs, which ran its operators as
  // one (batch_runner_steps.cpp).
  static std::string in_graph(uint64_t step);
  void await_lane(const op_desc& op, uint64_t index, bool launched);
  void publish_before(uint64_t index, bool launched);
  void acknowledge(std::size_t count, bool always = false);
  void fail(uint64_t index, const std::string& what);
  int track() const noexcept { return static_cast<int>(setup_.lane) + 1; }

  batch_runner_setup setup_;
  runner_answers& out_;
  std::shared_ptr<kernel_stream> stream_; // also kept by shares of its memory (lane_streams)
  std::unique_ptr<recording_stream> recorder_; // in front of stream_: what the runner calls
  std::unique_ptr<naive_runner> runner_; // declared after these: destroyed before them
  step_cache steps_;
  graph_counts graph_counts_;
  std::vector<recorded_call> calls_; // of the step being recorded
  std::vector<uint64_t> binding_;    // likewise
  std::vector<std::size_t> cuts_;    // likewise: where its stretches end (step_cache::graph_slot)
  std::vector<operand_effect> effects_; // likewise, at its first recording
  std::vector<operand_id> created_;     // the operands a prepared run makes
  // The step a graph launched since the last synchronize ran (0: none): an asynchronous failure
  // names it.
  uint64_t graph_step_ = 0;
  bool failed_ = false;
  bool launched_ = false; // operators launched since the last synchronize
  int pid_ = 0;
  std::vector<pending_ack> pending_;
  uint64_t entries_ = 0; // entries (operators and releases) of every batch run
  // The operator being run, and whether operators of its batch were launched before it.
  uint64_t running_index_ = 0;
  bool running_launched_ = false;
  uint64_t ops_unconfirmed_ = 0;
  uint64_t host_bytes_unconfirmed_ = 0; // copied from or to the store since the last confirm
  uint64_t host_bytes_budget_ = 0;
};

} // namespace ag
