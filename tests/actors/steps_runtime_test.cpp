// Steps through a whole runtime (runtime::mark_step, graph_option::cuda_graphs) on sim devices, in
// both modes: a loop that marks each iteration gets the results of the same loop without graphs,
// bit for bit, including moves between devices inside a step, a read in the middle of one, and a
// replay of its trace with graphs on and off. The timeline shows the steps replayed as graphs.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "actors/replay.hpp"
#include "ipc/trace.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/replay_helpers.hpp"
#include "tests/temp_files.hpp"

using Catch::Contains;
using ag::test::temp_dir;

namespace {

std::string slurp_text(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ag::graph_option steps_option(bool process, bool graphs) {
  ag::graph_option opt;
  opt.devices = {ag::device::sim(0), ag::device::sim(1)};
  opt.per_device_per_process = process;
  opt.transport = ag::test::transport_under_test();
  opt.store_bytes = std::size_t{64} << 20;
  opt.cuda_graphs = graphs ? ag::cuda_graphs::automatic : ag::cuda_graphs::off;
  return opt;
}

// A loop of `steps` iterations, each a step: a layer on sim:0 whose weights it updates, its output
// moved to sim:1 and summed there; every third iteration also reads the sum in the middle of its
// step. Returns the weights and every sum read, as bits.
std::vector<float> train_like(const ag::graph_option& opt, int steps) {
  ag::runtime rt{opt};
  const auto d0 = ag::device::sim(0), d1 = ag::device::sim(1);
  std::vector<float> xs(32 * 16), ws(16 * 8);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = float(i % 7) * 0.25f - 0.5f;
  for (std::size_t i = 0; i < ws.size(); ++i)
    ws[i] = float(i % 5) * 0.125f - 0.25f;
  auto x = rt.from_vector({32, 16}, xs, d0);
  auto w = rt.from_vector({16, 8}, ws, d0);
  auto b = rt.full({8}, 0.1, d0);
  std::vector<float> out;
  for (int s = 0; s < steps; ++s) {
    auto h = (x.matmul(w) + b).relu();
    auto total = h.to(d1).sum();
    w = w * 0.999 + h.sum() * 1e-4;
    if (s % 3 == 2)
      out.push_back(total.to_vector().at(0));
    rt.mark_step();
  }
  auto last = w.to_vector();
  out.insert(out.end(), last.begin(), last.end());
  return out;
}

} // namespace

TEST_CASE("a loop of steps gets the same bits with graphs on and off, in both modes",
          "[steps][process]") {
  for (bool process : {false, true}) {
    CAPTURE(process);
    const auto off = train_like(steps_option(process, false), 12);
    const auto on = train_like(steps_option(process, true), 12);
    REQUIRE(on.size() == off.size());
    for (std::size_t i = 0; i < on.size(); ++i) {
      CAPTURE(i);
      CHECK(std::memcmp(&on[i], &off[i], sizeof(float)) == 0);
    }
  }
}

TEST_CASE("the timeline shows steps replayed as graphs, prepared, and marks their capture",
          "[steps][process]") {
  for (bool process : {false, true}) {
    CAPTURE(process);
    temp_dir dir{"steps-timeline"};
    auto opt = steps_option(process, true);
    opt.timeline_path = dir.file("timeline.json");
    {
      ag::runtime rt{opt};
      auto x = rt.full({1024}, 1.0, ag::device::sim(0));
      for (int s = 0; s < 10; ++s) {
        auto y = (x + x) * 2.0;
        x = y - 3.0;
        rt.mark_step();
      }
      CHECK(x.to_vector() == std::vector<float>(1024, 1.0f));
    }
    const auto text = slurp_text(dir.file("timeline.json"));
    CHECK_THAT(text, Contains(R"("name":"capture","cat":"graph")"));
    CHECK_THAT(text, Contains("(graph)"));
    // Later runs bind without their operators (a child reads them as shape and values).
    CHECK_THAT(text, Contains(R"("name":"prepared","cat":"graph")"));
  }
}

TEST_CASE("recorded steps replay to the same digests with graphs on and off", "[steps][trace]") {
  temp_dir dir{"steps-trace"};
  auto opt = steps_option(false, true);
  opt.trace_path = dir.file("steps.trace");
  (void)train_like(opt, 9);
  const auto t = ag::trace::read_file(opt.trace_path);
  bool any_step = false;
  for (const auto& r : t.records)
    if (const auto* l = std::get_if<ag::trace::local_rec>(&r.body))
      any_step = any_step || l->b.step != 0;
  CHECK(any_step);
  std::vector<std::string> digests;
  for (bool graphs : {true, false}) {
    caf::actor_system_config cfg;
    cfg.set("scheduler.max-threads", 2);
    cfg.set("logger.console", caf::atom("none"));
    caf::actor_system sys{cfg};
    ag::replay_options ro;
    ro.timeout = std::chrono::seconds{20};
    ro.transport = ag::test::transport_under_test();
    ro.steps.enabled = graphs;
    const auto report = ag::replay(sys, t, ro);
    CHECK(report.matched);
    CHECK(report.divergence == "");
    std::string d;
    for (const auto& r : report.digests)
      d += r.what + "=" + std::to_string(r.digest) + "\n";
    digests.push_back(d);
  }
  CHECK(digests[0] == digests[1]);
  CHECK_FALSE(digests[0].empty());
}

TEST_CASE("a child killed while it replays steps fails its device's work, and the rest goes on",
          "[steps][faults]") {
  auto opt = steps_option(true, true);
  opt.wait_timeout = std::chrono::seconds{5};
  {
    ag::runtime rt{opt};
    auto x = rt.full({4096}, 1.0, ag::device::sim(0));
    auto y = rt.full({64}, 2.0, ag::device::sim(1));
    for (int s = 0; s < 20; ++s) { // replayed as graphs from the third on
      x = (x * 0.5) + 0.5;
      y = y * 1.0;
      rt.mark_step();
    }
    REQUIRE(x.to_vector() == std::vector<float>(4096, 1.0f));
    for (int s = 0; s < 200; ++s) {
      x = (x * 0.5) + 0.5;
      rt.mark_step();
    }
    const pid_t child = ag::test::runner_of_lane(1);
    REQUIRE(child > 0);
    ::kill(child, SIGKILL);
    for (int s = 0; s < 5; ++s) {
      x = (x * 0.5) + 0.5;
      rt.mark_step();
    }
    CHECK_THROWS_WITH(x.to_vector(), Contains("sim:0") && Contains("signal 9"));
    CHECK((y * y).to_vector() == std::vector<float>(64, 4.0f)); // the other device's steps
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:0"));
  }
  CHECK(ag::test::runner_children().empty());
  CHECK(ag::test::my_shm().empty());
}

TEST_CASE("threads that submit and mark steps at once each get their own results in order",
          "[steps][concurrency]") {
  for (bool process : {false, true})
  for (bool graphs : {false, true}) {
    CAPTURE(process, graphs);
    ag::runtime rt{steps_option(process, graphs)};
    constexpr int threads = 4, rounds = 60;
    std::vector<std::vector<float>> got(threads);
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const auto d = ag::device::sim(t % 2);
        auto x = rt.full({256}, double(t), d);
        for (int r = 0; r < rounds; ++r) {
          x = x + 1.0;
          if (r % 7 == 3)
            x = x.to(ag::device::sim((t + 1) % 2)).to(d); // a move inside the step
          rt.mark_step();
          if (r % 20 == 19) // a read in the middle of another thread's step
            (void)x.sum().to_vector();
        }
        got[t] = x.to_vector();
      });
    for (auto& th : pool)
      th.join();
    for (int t = 0; t < threads; ++t)
      CHECK(got[t] == std::vector<float>(256, float(t + rounds)));
  }
}
