// Several user threads on one runtime, in both modes: each builds and reads its own chain (on
// devices shared with the others), one reads a tensor every thread shares, one calls sync() and
// stats() throughout, all under a small in-flight bound so that submitters also block.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using namespace std::chrono_literals;

TEST_CASE("several threads submit, read and sync on one runtime at once", "[concurrency][process]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  ag::graph_option opt;
  opt.devices = ag::parse_devices("sim:0,sim:1");
  opt.per_device_per_process = process;
  opt.store_bytes = std::size_t{64} << 20;
  opt.wait_timeout = 30s;
  opt.max_in_flight_ops = 32;
  opt.transport = transport_under_test();
  {
    ag::runtime rt{opt};
    const ag::tensor shared = rt.full({64}, 1.0f, ag::device::sim(0));
    constexpr int threads = 4;
    constexpr int steps = 300;
    std::vector<std::vector<float>> results(threads);
    std::vector<std::string> errors(threads + 1);
    std::atomic<bool> done{false};
    std::vector<std::thread> users;
    for (int t = 0; t < threads; ++t)
      users.emplace_back([&, t] {
        try {
          const auto dev = ag::device::sim(t % 2);
          const auto mine = shared.to(dev); // a copy of the handle per thread
          auto x = rt.full({64}, float(t), dev);
          for (int i = 0; i < steps; ++i) {
            x = x + mine;
            if (i % 50 == 49)
              (void)x.to(ag::device::cpu()).to_vector();
          }
          results[t] = x.to(ag::device::cpu()).to_vector();
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    std::thread watcher([&] {
      try {
        while (!done) {
          rt.sync();
          (void)rt.stats();
        }
      } catch (const std::exception& e) {
        errors[threads] = e.what();
      }
    });
    for (auto& u : users)
      u.join();
    done = true;
    watcher.join();
    for (int t = 0; t <= threads; ++t) {
      INFO("thread " << t);
      CHECK(errors[t].empty());
    }
    for (int t = 0; t < threads; ++t)
      CHECK(results[t] == std::vector<float>(64, float(t) + steps));
    rt.sync();
    CHECK(rt.stats().in_flight_ops == 0);
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}
