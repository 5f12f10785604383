// Steps as CUDA graphs on a real GPU: a runner on cuda:0 captures a step it ran before, replays
// it, updates it in place (cudaGraphExecUpdate) for other scalars, and runs a step it cannot
// capture operator by operator; a runtime's marked loop gets the bits of the same loop without
// graphs, in both modes. Runs where a CUDA device is visible.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "actors/batch_runner.hpp"

namespace {

struct answers final : ag::runner_answers {
  std::vector<std::string> failures;
  void done(uint32_t, uint64_t, uint64_t) override {}
  void failed(uint32_t, uint64_t, std::string what) override { failures.push_back(std::move(what)); }
};

constexpr uint64_t n = 4096;
constexpr std::size_t range_bytes = n * sizeof(float);

struct cuda_lane {
  std::vector<std::byte> store = std::vector<std::byte>(4 * range_bytes);
  answers out;
  ag::batch_runner runner;
  uint64_t ops = 0;
  ag::operand_id next_id = 100;

  cuda_lane() : runner(setup(), out) {
    ag::batch b;
    b.ops.push_back(ag::make_op(ag::op_kind::fill, {1}, {}, {}, n, 0, 0, 0, 1.5));
    send(b);
  }
  ag::batch_runner_setup setup() {
    ag::batch_runner_setup s;
    s.lane = 1;
    s.dev = ag::device::cuda(0);
    s.store_base = store.data();
    s.store_size = store.size();
    s.pin_store = true;
    s.steps.enabled = true;
    return s;
  }
  void send(ag::batch& b) {
    b.lane = 1;
    b.ops_before = ops;
    ops += b.ops.size();
    runner.execute(b, false);
  }
  // out = (x + x) * c into store range r; with host_copy, the result is also copied from range r
  // to range r + 1 (on the host, a copy no CUDA graph could capture).
  void step(uint64_t s, double c, int r, bool host_copy = false) {
    const ag::operand_id t1 = next_id++, t2 = next_id++;
    ag::batch b;
    b.step = s;
    b.ops.push_back(ag::make_op(ag::op_kind::add, {t1}, {1}, {1}, n, 0, 0, 0));
    b.ops.push_back(ag::make_op(ag::op_kind::mul, {t2}, {t1}, {}, n, 0, 0, 0, c));
    b.ops.push_back(ag::make_op(ag::op_kind::copy, {0, uint64_t(r) * range_bytes}, {t2}, {}, n,
                                0, 0, 0));
    if (host_copy)
      b.ops.push_back(ag::make_op(ag::op_kind::copy, {0, uint64_t(r + 1) * range_bytes},
                                  {0, uint64_t(r) * range_bytes}, {}, n, 0, 0, 0));
    b.no_hold = {t1, t2};
    send(b);
  }
  std::vector<float> range(int r) const {
    std::vector<float> v(n);
    std::memcpy(v.data(), store.data() + r * range_bytes, range_bytes);
    return v;
  }
};

std::vector<float> loop(bool process, bool graphs) {
  ag::graph_option opt;
  opt.devices = {ag::device::cuda(0)};
  opt.per_device_per_process = process;
  opt.cuda_graphs = graphs ? ag::cuda_graphs::automatic : ag::cuda_graphs::off;
  ag::runtime rt{opt};
  const auto d = ag::device::cuda(0);
  auto x = rt.uniform({64, 128}, -1.0, 1.0, 3, d);
  auto w = rt.uniform({128, 32}, -0.1, 0.1, 4, d);
  std::vector<float> out;
  for (int s = 0; s < 12; ++s) {
    auto h = (x.matmul(w) + 0.5).relu();
    auto loss = h.sum();
    w = w * 0.99 + ag::matmul(x.transpose(0, 1), h) * 1e-3;
    if (s % 4 == 3)
      out.push_back(loss.to_vector().at(0));
    rt.mark_step();
  }
  const auto last = w.to_vector();
  out.insert(out.end(), last.begin(), last.end());
  return out;
}

} // namespace

TEST_CASE("a cuda runner captures a repeated step, replays it and updates it for new scalars",
          "[cuda]") {
  cuda_lane l;
  for (uint64_t s = 1; s <= 8; ++s) {
    CAPTURE(s);
    l.step(s, 2.0, 0);
    l.runner.confirm();
    CHECK(l.range(0) == std::vector<float>(n, 6.0f));
  }
  REQUIRE(l.out.failures.empty());
  CHECK(l.runner.graphs().launched == 6);
  CHECK(l.runner.graphs().instantiated == 2); // the two blocks swap from run to run
  for (uint64_t s = 9; s <= 20; ++s) {
    CAPTURE(s);
    l.step(s, double(s), 0);
    l.runner.confirm();
    CHECK(l.range(0) == std::vector<float>(n, 3.0f * float(s)));
  }
  REQUIRE(l.out.failures.empty());
  CHECK(l.runner.graphs().updated > 0);
  CHECK(l.runner.graphs().failed == 0);
}

TEST_CASE("a step's copies from and to the store run between its graphs, each on its ranges",
          "[cuda]") {
  cuda_lane l;
  for (uint64_t s = 1; s <= 8; ++s) {
    CAPTURE(s);
    const int r = s % 2 == 0 ? 0 : 2; // the store ranges change from step to step
    l.step(s, 1.0, r, true);
    l.runner.confirm();
    CHECK(l.range(r + 1) == std::vector<float>(n, 3.0f));
    std::memset(l.store.data(), 0, l.store.size());
  }
  REQUIRE(l.out.failures.empty());
  CHECK(l.runner.graphs().failed == 0);
  CHECK(l.runner.graphs().launched == 6);
  CHECK(l.runner.graphs().instantiated == 2); // the store ranges are not part of the binding
}

TEST_CASE("a marked loop on cuda:0 gets the bits of the same loop without graphs", "[cuda]") {
  for (bool process : {false, true}) {
    CAPTURE(process);
    const auto off = loop(process, false);
    const auto on = loop(process, true);
    REQUIRE(on.size() == off.size());
    CHECK(std::memcmp(on.data(), off.data(), on.size() * sizeof(float)) == 0);
  }
}
