// The rig of the step tests on a runner (step_graphs_test.cpp on sim, cuda_steps_test.cpp on a
// GPU): one lane's batch_runner over a store of 16 ranges of n floats, the answers it gave, and
// the steps the tests send it: out = (x + x) * c, its intermediates released within the step.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "actorgraph/device.hpp"
#include "actors/batch_runner.hpp"

namespace ag::test {

struct step_answers final : ag::runner_answers {
  std::vector<uint64_t> done_counts;
  std::vector<std::string> failures;
  uint64_t live = 0; // device bytes live after the last batch acknowledged
  void done(uint32_t, uint64_t ops_done, uint64_t, uint64_t device_live) override {
    done_counts.push_back(ops_done);
    live = device_live;
  }
  void failed(uint32_t, uint64_t, std::string what) override { failures.push_back(std::move(what)); }
};

struct step_lane {
  static constexpr int ranges = 16;
  const uint64_t n;
  const std::size_t range_bytes = n * sizeof(float);
  std::vector<std::byte> store = std::vector<std::byte>(ranges * range_bytes);
  step_answers out;
  ag::batch_runner runner;
  uint64_t ops = 0;
  ag::operand_id next_id = 100;

  // On `dev` (a CUDA stream pins the store), #1 holding n elements of 1.5, #2 n / 2 of 2.5 and
  // #3 n of 4.
  step_lane(ag::device dev, ag::step_policy p, uint64_t elements)
    : n(elements), runner(setup(dev, p), out) {
    ag::batch b;
    b.ops.push_back(ag::make_op(ag::op_kind::fill, {1}, {}, {}, n, 0, 0, 0, 1.5));
    b.ops.push_back(ag::make_op(ag::op_kind::fill, {2}, {}, {}, n / 2, 0, 0, 0, 2.5));
    b.ops.push_back(ag::make_op(ag::op_kind::fill, {3}, {}, {}, n, 0, 0, 0, 4.0));
    send(b);
  }

  ag::batch_runner_setup setup(ag::device dev, ag::step_policy p) {
    ag::batch_runner_setup s;
    s.lane = 1;
    s.dev = dev;
    s.store_base = store.data();
    s.store_size = store.size();
    s.pin_store = dev.type == ag::device::kind::cuda;
    s.steps = p;
    return s;
  }

  void send(ag::batch& b) {
    b.lane = 1;
    b.ops_before = ops;
    ops += b.ops.size();
    runner.execute(b, false);
  }

  // Step `step`: out = (x + x) * c into store range r, x being #1 or #3 (count n) or #2 (n / 2); with
  // host_copy, out is also copied from range r to range r + 1 (on the host).
  void step(uint64_t step, double c, int r, ag::operand_id x = 1, bool host_copy = false) {
    const uint64_t count = x == 2 ? n / 2 : n;
    const ag::operand_id t1 = next_id++, t2 = next_id++;
    ag::batch b;
    b.step = step;
    b.ops.push_back(ag::make_op(ag::op_kind::add, {t1}, {x}, {x}, count, 0, 0, 0));
    b.ops.push_back(ag::make_op(ag::op_kind::mul, {t2}, {t1}, {}, count, 0, 0, 0, c));
    b.ops.push_back(ag::make_op(ag::op_kind::copy, {0, uint64_t(r) * range_bytes}, {t2}, {},
                                count, 0, 0, 0));
    if (host_copy)
      b.ops.push_back(ag::make_op(ag::op_kind::copy, {0, uint64_t(r + 1) * range_bytes},
                                  {0, uint64_t(r) * range_bytes}, {}, count, 0, 0, 0));
    b.no_hold = {t1, t2};
    send(b);
  }

  // Indices #13 (eight 3s) and #14 (eight 100000s, out of range), int64.
  void make_indices() {
    ag::batch idx;
    auto good = ag::make_op(ag::op_kind::fill, {13}, {}, {}, 8, 0, 0, 0, 3);
    good.type = ag::dtype::int64;
    auto bad = ag::make_op(ag::op_kind::fill, {14}, {}, {}, 8, 0, 0, 0, 100000);
    bad.type = ag::dtype::int64;
    idx.ops = {good, bad};
    send(idx);
  }

  // Step `step`: the rows of the table #1 ([n / 4, 4]) at `indices` (#13 or #14), copied to the
  // store's first range.
  void gather_step(uint64_t step, ag::operand_id indices) {
    const ag::operand_id t = next_id++;
    ag::batch b;
    b.step = step;
    auto emb = ag::make_op(ag::op_kind::embedding, {t}, {1}, {indices}, 8 * 4, n / 4, 4, 8);
    emb.in_type = ag::dtype::int64;
    b.ops.push_back(emb);
    b.ops.push_back(ag::make_op(ag::op_kind::copy, {0, 0}, {t}, {}, 8 * 4, 0, 0, 0));
    b.no_hold = {t};
    send(b);
  }

  std::vector<float> range(int r, uint64_t count = 0) const {
    std::vector<float> v(count == 0 ? n : count);
    std::memcpy(v.data(), store.data() + r * range_bytes, v.size() * sizeof(float));
    return v;
  }
  void clear() { std::memset(store.data(), 0, store.size()); }
};

// The sim lane of the tests on this machine: ranges of 1024 floats.
constexpr uint64_t sim_elements = 1024;
struct sim_lane : step_lane {
  explicit sim_lane(ag::step_policy p) : step_lane(ag::device::sim(0), p, sim_elements) {}
};

inline std::vector<float> all(float x, uint64_t count = sim_elements) {
  return std::vector<float>(count, x);
}

inline ag::step_policy graphs_on(std::size_t max = 64) {
  ag::step_policy p;
  p.enabled = true;
  p.max_graphs = max;
  return p;
}

} // namespace ag::test
