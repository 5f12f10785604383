// step_cache: the steps (runtime::mark_step) a runner has seen, by their shape (the operators'
// kinds, dtypes, sizes, layouts and where each operand lives, without ids, store offsets or
// scalars), how often each ran, and the graphs it keeps of them (kernel_stream::capture): each for
// one binding, the operand addresses and scalars the captured calls took. A later run of the step
// whose binding equals a graph's launches that graph; one whose binding differs updates a graph
// of the step in place. Plain class: the batch runner owns one per lane; tests drive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "actors/step_policy.hpp"
#include "cuda/kernel_stream.hpp"
#include "cuda/naive_runner.hpp"
#include "graph/op.hpp"

namespace ag {

class step_cache {
public:
  // The graphs of one binding: one per stretch of the step's calls between those that copy from
  // or to the store, which run as they are (recorded_call::host); cuts: where each stretch ends,
  // host ones marked, as they were when it was captured.
  struct graph_slot {
    std::vector<uint64_t> binding;
    std::vector<std::size_t> cuts;
    std::vector<std::unique_ptr<stream_graph>> graphs;
    // The calls captured, with the store ranges of the copies between the graphs as the run that
    // captured them had them: a prepared run (entry::effects) sets its own before it launches.
    std::vector<recorded_call> calls;
    bool patchable = false; // every call between the graphs is a copy of the operator's own range
    bool ready = false; // captured: binding, cuts and graphs belong together
    uint64_t used = 0;  // the cache's clock at its last launch
  };
  struct entry {
    std::vector<op_desc> shape; // its operators, ids, offsets and scalars cleared
    uint64_t hash = 0;
    // The shape a child's decoder gave its last run (batch::shape): the same object next time.
    std::shared_ptr<const step_shape> decoded;
    uint64_t seen = 0;          // runs, this one included
    uint32_t failed_captures = 0; // in a row; past 3 the step runs as it is from then on
    // What its operators did with their operands when it was first recorded: a later run does
    // that again in their place (batch_runner::run_prepared). Empty: not known, or not possible.
    std::vector<operand_effect> effects;
    std::vector<graph_slot> graphs;
  };

  explicit step_cache(step_policy p) noexcept : policy_(p) {}

  // The entry of batch b's step, counted as run once more; null when b is not one to keep: not
  // a step, graphs off, fewer than min_operators, or an operator that waits on the host (await)
  // or reads another lane's memory (the peer operators).
  entry* see(const batch& b);
  // Whether e's run now should be recorded: it ran capture_after times before, and captures of it
  // have not kept failing.
  bool wants_graph(const entry& e) const noexcept {
    return e.seen > policy_.capture_after && e.failed_captures <= 3;
  }
  // e's graphs for `binding` and `cuts`, marked used; null when none.
  // cuts null: any (a prepared run has none of its own).
  graph_slot* match(entry& e, const std::vector<uint64_t>& binding,
                    const std::vector<std::size_t>* cuts);
  // Where a graph of e for a new binding goes: a new slot while e has fewer than graphs_per_step,
  // else e's least recently used one (whose graph a capture updates in place). A new slot past
  // max_graphs evicts the least recently used graph of the cache first.
  graph_slot& slot_for(entry& e);

  std::size_t graphs() const noexcept { return graphs_; }
  std::size_t steps() const noexcept { return entries_.size(); }

private:
  void evict_one_graph(const entry* keep);

  step_policy policy_;
  uint64_t clock_ = 0;
  std::size_t graphs_ = 0;
  std::list<entry> entries_;
  std::unordered_multimap<uint64_t, std::list<entry>::iterator> by_hash_;
};

} // namespace ag
