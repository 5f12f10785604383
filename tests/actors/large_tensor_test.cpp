// Tensors larger than the host store go through it in pieces, in both modes and both directions:
// an upload to a device, a move between devices, and a read of a device tensor.
#include <catch2/catch.hpp>

#include <chrono>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using namespace std::chrono_literals;
using Catch::Contains;

TEST_CASE("a tensor three times the size of the store reaches, crosses and leaves devices",
          "[backpressure][process]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  ag::graph_option opt;
  opt.devices = ag::parse_devices("sim:0,sim:1");
  opt.per_device_per_process = process;
  opt.store_bytes = (std::size_t{4} << 20) / tsan_shrink; // 4 MiB (512 KiB)
  opt.wait_timeout = 30s;
  opt.transport = transport_under_test();
  {
    ag::runtime rt{opt};
    const std::size_t n = 3 * 1024 * 1024 / tsan_shrink; // three times the store
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i)
      values[i] = static_cast<float>(i % 1000) * 0.5f;
    const auto a = rt.from_vector({int64_t(n)}, values, ag::device::sim(0));
    const auto doubled = a + a;
    const auto moved = doubled.to(ag::device::sim(1));
    const auto back = moved.to_vector();
    REQUIRE(back.size() == n);
    bool same = true;
    for (std::size_t i = 0; i < n && same; ++i)
      same = back[i] == values[i] * 2.0f;
    CHECK(same);
    CHECK(a.to_vector() == values);
    // Small results still come back through a cpu tensor.
    CHECK(moved.sum().to_vector().size() == 1);
    // A cpu tensor lives in the store: one larger than it is refused, naming the option.
    CHECK_THROWS_WITH(a.to(ag::device::cpu()).sum().to_vector(),
                      Contains("store full") && Contains("store_bytes"));
    CHECK_THROWS_WITH(rt.sync(), Contains("store full")); // that failure, reported once
    rt.sync();
    CHECK(rt.stats().store_live_bytes == 0);
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a tensor too large for host memory fails as ag::error naming its producer's failure, "
          "never std::bad_alloc",
          "[backpressure][process]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  for (const int64_t n : {int64_t{1} << 40, int64_t{1} << 36}) {
    INFO(n << " elements");
    {
      ag::runtime rt{sim_options(process)};
      const auto huge = rt.full({n}, 1.0f, ag::device::sim(0));
      // The sim runner cannot allocate it: the read reports that, not the host memory its own
      // copy of the values would have needed. (A device whose operator failed runs nothing more.)
      CHECK_THROWS_AS(huge.to_vector(), ag::error);
      CHECK_THROWS_WITH(huge.to_vector(), Contains("out of host memory") && Contains("sim:0"));
      const auto other = rt.full({n}, 2.0f, ag::device::sim(1));
      const auto reduced = ag::all_reduce({huge, other});
      for (const auto& r : reduced)
        CHECK_THROWS_AS(r.to_vector(), ag::error);
      CHECK_THROWS_AS(rt.sync(), ag::error);
      // The controller's own work goes on.
      CHECK(rt.full({2}, 4.0f, ag::device::cpu()).to_vector() == std::vector<float>{4.0f, 4.0f});
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}
