// The executor's batching and release of operands nobody holds, observed through the runtime's
// stats on real actors (thread mode, sim devices).
#include <catch2/catch.hpp>

#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

namespace {

ag::graph_option sim_option(const char* devices = "sim:0,sim:1") {
  ag::graph_option opt;
  opt.devices = ag::parse_devices(devices);
  opt.transport = ag::test::transport_under_test();
  return opt;
}

} // namespace

TEST_CASE("operators queued while the executor is busy go out in few batches", "[actors]") {
  ag::runtime rt{sim_option()};
  const auto before = rt.stats();
  constexpr int ops = 2000;
  {
    // Copying 64 MiB into the store keeps the executor busy while the user's thread queues ops.
    auto big = rt.from_vector({16 << 20}, std::vector<float>(16 << 20, 1.0f), ag::device::cpu());
    auto x = rt.full({64}, 1.0f, ag::device::sim(0));
    for (int i = 0; i < ops; ++i)
      x = x + x;
    rt.sync();
  }
  rt.sync();
  const auto after = rt.stats();
  const auto batches = after.batches - before.batches;
  const auto operators = after.operators - before.operators;
  CHECK(operators == ops + 1);
  // Adaptive batching: a batch per mailbox drain, not per operator.
  CHECK(batches * 4 <= operators);
}

TEST_CASE("store and device bytes return to zero once every tensor is dropped", "[actors]") {
  ag::runtime rt{sim_option()};
  {
    auto a = rt.from_vector({1000}, std::vector<float>(1000, 2.0f), ag::device::cpu());
    auto b = a.to(ag::device::sim(0));
    auto c = (b + b) * b;
    auto d = c.to(ag::device::sim(1));
    auto e = d.relu().sum();
    auto f = e.to(ag::device::cpu());
    auto m = rt.full({32, 16}, 0.5f, ag::device::sim(1));
    auto n = m.matmul(rt.full({16, 8}, 1.0f, ag::device::sim(1)));
    CHECK(f.to_vector() == std::vector<float>{8000.0f});
    CHECK(n.to_vector() == std::vector<float>(32 * 8, 8.0f));
    rt.sync();
    const auto held = rt.stats();
    CHECK(held.store_live_bytes > 0);
    CHECK(held.device_live_bytes > 0);
  }
  rt.sync();
  const auto stats = rt.stats();
  CHECK(stats.store_live_bytes == 0);
  CHECK(stats.device_live_bytes == 0);
}

TEST_CASE("temporaries of one expression are released with the batch that made them",
          "[actors]") {
  ag::runtime rt{sim_option("sim:0")};
  auto a = rt.full({4096}, 3.0f, ag::device::sim(0));
  auto b = rt.full({4096}, 2.0f, ag::device::sim(0));
  rt.sync();
  const auto base = rt.stats().device_live_bytes;
  CHECK(base == 2 * 4096 * sizeof(float));
  for (int i = 0; i < 50; ++i) {
    auto c = (a + b) * a - b / a; // four temporaries, one result, all dropped
    (void)c;
  }
  rt.sync();
  CHECK(rt.stats().device_live_bytes == base);
}
