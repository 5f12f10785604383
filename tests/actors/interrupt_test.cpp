// interrupt_scope: a thread's waits on a runtime (sync, reads, an operator waiting for room) end
// with ag::interrupted once the scope's check says so, on both paths in both modes (on the sockets
// path the reply is received in slices); the work goes on and can be waited for again; without a
// scope nothing changes.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

namespace {

using Catch::Contains;

// A check that says "interrupt" from its n-th call on, counting its calls.
struct after_calls {
  int n;
  std::atomic<int> calls{0};
  static bool check(void* self) {
    auto* a = static_cast<after_calls*>(self);
    return ++a->calls >= a->n;
  }
};

// A second or more of sim:1's time (scaled to keep the values near 1: denormals would be slower).
ag::tensor long_result(ag::runtime& rt) {
  auto x = rt.uniform({384, 384}, -1, 1, 7, ag::device::sim(1));
  auto y = x;
  for (int i = 0; i < 60; ++i)
    y = ag::matmul(y, x) * 0.088;
  return y;
}

} // namespace

TEST_CASE("an interrupt scope's check ends a read and a sync and the runtime goes on",
          "[process]") {
  for (auto path : {ag::transport::shared_memory, ag::transport::sockets})
  for (bool process : {false, true}) {
    INFO((process ? "process" : "thread") << " mode, "
         << (path == ag::transport::sockets ? "sockets" : "shared memory"));
    auto opt = ag::test::sim_options(process);
    opt.transport = path;
    opt.wait_timeout = std::chrono::minutes{5}; // the whole product, under a sanitizer too
    ag::runtime rt{opt};
    const auto y = long_result(rt);
    after_calls check{2};
    {
      ag::interrupt_scope scope{&after_calls::check, &check};
      CHECK_THROWS_AS(y.to_vector(), ag::interrupted);
      CHECK(check.calls >= 2);
      check.calls = 0;
      CHECK_THROWS_WITH(rt.sync(), Contains("sync: interrupted"));
    }
    const auto values = y.to_vector(); // outside the scope: waited for to the end
    CHECK(values == y.to_vector());
    CHECK((rt.from_vector({1}, {1.0f}, ag::device::sim(0)) + 1.0).to_vector()
          == std::vector<float>{2.0f});
  }
}

TEST_CASE("an operator waiting for room is interrupted too", "[backpressure]") {
  auto opt = ag::test::sim_options(false);
  opt.transport = ag::transport::shared_memory;
  opt.max_in_flight_ops = 2;
  ag::runtime rt{opt};
  // Products of a tenth of a second or more each: the third call waits for room past a slice.
  const auto x = rt.uniform({1024, 1024}, -1, 1, 3, ag::device::sim(1));
  after_calls check{1};
  ag::interrupt_scope scope{&after_calls::check, &check};
  auto chain = [&] {
    auto y = x;
    for (int i = 0; i < 8; ++i)
      y = ag::matmul(y, x);
    return y;
  };
  CHECK_THROWS_WITH(chain(), Contains("waiting for room: interrupted"));
}
