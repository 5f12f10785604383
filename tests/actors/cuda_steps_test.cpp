// Steps as CUDA graphs on a real GPU: a runner on cuda:0 captures a step it ran before, replays
// it, updates it in place (cudaGraphExecUpdate) for other scalars, runs a step's copies from and
// to the store between its graphs, and keeps no more graphs than its bound; a runtime's marked
// loop gets the bits of the same loop without graphs, in both modes, and its trace replays to the
// same digests with graphs on and off; an index out of range fails its device, inside a graph
// naming the step. Runs where a CUDA device is visible.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actors/replay.hpp"
#include "ipc/trace.hpp"
#include "tests/actors/step_lane.hpp"

using Catch::Contains;

namespace {

constexpr uint64_t n = 4096;

struct cuda_lane : ag::test::step_lane {
  cuda_lane() : step_lane(ag::device::cuda(0), ag::test::graphs_on(), ::n) {}
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
  CHECK(l.runner.graphs().prepared == 4);     // runs 5 to 8 bound without their operators
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
    l.step(s, 1.0, r, 1, true);
    l.runner.confirm();
    CHECK(l.range(r + 1) == std::vector<float>(n, 3.0f));
    l.clear();
  }
  REQUIRE(l.out.failures.empty());
  CHECK(l.runner.graphs().failed == 0);
  CHECK(l.runner.graphs().launched == 6);
  CHECK(l.runner.graphs().instantiated == 2); // the store ranges are not part of the binding
  CHECK(l.runner.graphs().prepared == 4);     // each with its own ranges for the copies
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

TEST_CASE("a cuda runner keeps no more graphs than its bound: two steps in turn with room for one",
          "[cuda]") {
  ag::test::step_lane l{ag::device::cuda(0), ag::test::graphs_on(1), n};
  for (uint64_t s = 1; s <= 12; ++s) {
    CAPTURE(s);
    const bool big = s % 2 == 0;
    l.step(s, 1.0, 0, big ? 1 : 2);
    l.runner.confirm();
    CHECK(l.range(0, big ? n : n / 2) == std::vector<float>(big ? n : n / 2, big ? 3.0f : 5.0f));
  }
  REQUIRE(l.out.failures.empty());
  CHECK(l.runner.graphs().launched == 8);
  CHECK(l.runner.graphs().instantiated == 8); // each step's graph evicts the other's
}

TEST_CASE("steps recorded on cuda:0 replay to the same digests with graphs on and off", "[cuda]") {
  const std::string path = "/tmp/ag-cuda-steps-" + std::to_string(::getpid()) + ".trace";
  {
    ag::graph_option opt;
    opt.devices = {ag::device::cuda(0)};
    opt.trace_path = path;
    ag::runtime rt{opt};
    auto x = rt.uniform({64, 128}, -1.0, 1.0, 3, ag::device::cuda(0));
    auto w = rt.uniform({128, 32}, -0.1, 0.1, 4, ag::device::cuda(0));
    for (int s = 0; s < 8; ++s) {
      w = w * 0.99 + ag::matmul(x.transpose(0, 1), (x.matmul(w) + 0.5).relu()) * 1e-3;
      rt.mark_step();
    }
    (void)w.to(ag::device::cpu()).to_vector();
  }
  const auto t = ag::trace::read_file(path);
  std::remove(path.c_str());
  std::vector<std::string> digests;
  for (bool graphs : {true, false}) {
    caf::actor_system_config cfg;
    cfg.set("logger.console", caf::atom("none"));
    caf::actor_system sys{cfg};
    ag::replay_options ro;
    ro.process = false;
    ro.timeout = std::chrono::seconds{20};
    ro.steps.enabled = graphs;
    const auto report = ag::replay(sys, t, ro);
    CHECK(report.matched);
    CHECK(report.divergence == "");
    digests.push_back(ag::format_digests(report.digests));
  }
  CHECK(digests[0] == digests[1]);
}

TEST_CASE("an index out of range on cuda:0 fails its device naming the index, in both modes",
          "[cuda]") {
  for (bool process : {false, true}) {
    CAPTURE(process);
    ag::graph_option opt;
    opt.devices = {ag::device::cuda(0)};
    opt.per_device_per_process = process;
    ag::runtime rt{opt};
    const auto d = ag::device::cuda(0);
    const auto table = rt.from_vector({5, 3}, std::vector<float>(15, 1.0f), d);
    const auto good = rt.from_vector({2}, std::vector<int32_t>{4, 0}, d);
    CHECK(ag::embedding(table, good).to_vector() == std::vector<float>(6, 1.0f));
    const auto bad = rt.from_vector({2}, std::vector<int64_t>{1, 7}, d);
    CHECK_THROWS_WITH(ag::embedding(table, bad).to_vector(),
                      Contains("cuda:0") && Contains("embedding: index 7 (at 1)")
                        && Contains("out of range for 5 entries"));
    CHECK_THROWS_WITH(rt.sync(), Contains("cuda:0"));
  }
}

TEST_CASE("an index out of range inside a step launched as a CUDA graph fails naming the step",
          "[cuda]") {
  cuda_lane l;
  l.make_indices();
  for (uint64_t s = 1; s <= 4; ++s) {
    l.gather_step(s, 13);
    l.runner.confirm();
  }
  REQUIRE(l.out.failures.empty());
  CHECK(l.runner.graphs().launched == 2);
  CHECK(l.range(0, 32) == std::vector<float>(32, 1.5f));
  l.gather_step(5, 14);
  l.runner.confirm();
  REQUIRE(l.out.failures.size() == 1);
  CHECK_THAT(l.out.failures[0], Contains("cuda:0") && Contains("index 100000")
                                  && Contains("out of range for 1024 entries")
                                  && Contains("in step 5, launched as a graph"));
  CHECK(l.out.done_counts.back() == l.ops);
}
