// queue_bench: what many requests queued without a wait cost (docs/BENCHMARKS.md, "Queued
// collectives"): `count` all_reduces of two small parts submitted back to back, then one sync(),
// against `count` adds on the same runtime in the same run; in process mode also how long their
// failure takes to settle once the children are killed with every one of them still queued.
// Each cost must stay O(1) amortised a request however many are queued, so both ratios stay
// bounded (target: within 10x of the adds).
#pragma once

#include <cmath>

#include <actorgraph/graph_option.hpp>

namespace ag::bench {

struct queue_figures {
  int count = 0;
  double adds_s = NAN;        // count adds on the first device, then sync()
  double collectives_s = NAN; // count all_reduces, then sync()
  double failure_s = NAN;     // process mode: from the children's SIGKILL to sync()'s ag::error
};

// A runtime of `opt` (its first two devices, or its first device and the cpu) for each figure.
// Results are checked; throws ag::error when one is wrong or a wait fails otherwise than expected.
queue_figures measure_queued_collectives(const ag::graph_option& opt, int count);

} // namespace ag::bench
