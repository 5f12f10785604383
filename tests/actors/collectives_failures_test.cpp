// Collectives that fail (include/actorgraph/collectives.hpp, actors/planner_collective.cpp): the
// errors thrown at the call, and that such a call submits nothing; a child killed while a
// collective is in flight, or killed with a collective's input on it; a cpu result that finds no
// store room. Results that succeed: collectives_test.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/collective_helpers.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/random_program.hpp" // same_bits

using namespace ag::test;
using namespace ag::test::collective;
using namespace std::chrono_literals;
using Catch::Contains;

namespace {

using ag::device;
using ag::shape_t;
using ag::tensor;

// What an ag::error says, or "" when f does not throw one.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ag::error& e) {
    return e.what();
  }
  return {};
}

} // namespace

// -- errors at the call ---------------------------------------------------------------------

TEST_CASE("a malformed group throws at the call naming what was wrong",
          "[collectives]") {
  ag::runtime rt{option(3, false)};
  const auto a = rt.full({4}, 1.0f, device::sim(0));
  const auto b = rt.full({4}, 2.0f, device::sim(1));
  const auto b5 = rt.full({5}, 2.0f, device::sim(1));
  const auto c = rt.full({4}, 3.0f, device::sim(0));
  const auto h = rt.full({4}, 4.0f, device::cpu());
  const auto scalar0 = a.sum();
  const auto scalar1 = b.sum();
  const auto odd0 = rt.full({7}, 1.0f, device::sim(0));
  const auto odd1 = rt.full({7}, 1.0f, device::sim(1));
  const auto m0 = rt.full({7, 3}, 1.0f, device::sim(0));
  const auto m1 = rt.full({7, 3}, 1.0f, device::sim(1));
  const auto m2 = rt.full({7, 3}, 1.0f, device::sim(2));
  const auto t3 = rt.full({3, 2}, 1.0f, device::sim(0));
  const auto t2 = rt.full({2, 3}, 1.0f, device::sim(1));
  rt.sync();

  SECTION("no parts") {
    CHECK_THROWS_WITH(ag::all_reduce({}),
                      Contains("all_reduce: no parts (one tensor per device is needed)"));
    CHECK_THROWS_WITH(ag::all_gather({}), Contains("all_gather: no parts"));
    CHECK_THROWS_WITH(ag::reduce_scatter({}), Contains("reduce_scatter: no parts"));
  }
  SECTION("shapes that differ") {
    CHECK_THROWS_WITH(ag::all_reduce({a, b5}),
                      Contains("all_reduce: shape mismatch: part 0 (float32[4] on sim:0), "
                               "part 1 (float32[5] on sim:1)"));
    CHECK_THROWS_WITH(ag::all_gather({a, h, b5}),
                      Contains("all_gather: shape mismatch: part 0 (float32[4] on sim:0), "
                               "part 2 (float32[5] on sim:1)"));
    // The same element count is not the same shape.
    CHECK_THROWS_WITH(ag::reduce_scatter({t3, t2}),
                      Contains("reduce_scatter: shape mismatch: part 0 (float32[3,2] on sim:0), "
                               "part 1 (float32[2,3] on sim:1)"));
  }
  SECTION("two parts on one device") {
    CHECK_THROWS_WITH(ag::all_reduce({a, b, c}),
                      Contains("all_reduce: device mismatch: part 0 (float32[4] on sim:0) and "
                               "part 2 (float32[4] on sim:0) are on the same device; one part "
                               "per device"));
    CHECK_THROWS_WITH(ag::all_gather({h, a, h}),
                      Contains("all_gather: device mismatch: part 0 (float32[4] on cpu) and "
                               "part 2 (float32[4] on cpu)"));
    CHECK_THROWS_WITH(ag::reduce_scatter({a, a}), Contains("are on the same device"));
  }
  SECTION("parts without a dimension to cut or join") {
    CHECK_THROWS_WITH(ag::all_gather({scalar0, scalar1}),
                      Contains("all_gather: parts must have at least one dimension, got "
                               "float32[] on sim:0"));
    CHECK_THROWS_WITH(ag::reduce_scatter({scalar0, scalar1}),
                      Contains("reduce_scatter: parts must have at least one dimension"));
    // all_reduce takes them: a scalar sum.
    const auto r = ag::all_reduce({scalar0, scalar1});
    CHECK(r[0].shape().empty());
    CHECK(r[1].to_vector() == floats{4.0f + 8.0f});
  }
  SECTION("dim 0 not divisible by the parts") {
    CHECK_THROWS_WITH(ag::reduce_scatter({odd0, odd1}),
                      Contains("reduce_scatter: dim 0 of float32[7] on sim:0 (7) is not "
                               "divisible by the 2 parts"));
    CHECK_THROWS_WITH(ag::reduce_scatter({m0, m1, m2}),
                      Contains("reduce_scatter: dim 0 of float32[7,3] on sim:0 (7) is not "
                               "divisible by the 3 parts"));
    // all_gather takes any dim 0.
    CHECK(ag::all_gather({m0, m1, m2})[2].shape() == shape_t{21, 3});
  }
  SECTION("broadcast to no device or an unknown one or one twice") {
    CHECK_THROWS_WITH(ag::broadcast(a, {}),
                      Contains("broadcast: no devices to broadcast float32[4] on sim:0 to"));
    CHECK_THROWS_WITH(ag::broadcast(a, {device::sim(1), device::sim(5)}),
                      Contains("broadcast: sim:5 is not a device of this runtime (broadcasting "
                               "float32[4] on sim:0)"));
    CHECK_THROWS_WITH(ag::broadcast(h, {device::cuda(0)}),
                      Contains("broadcast: cuda:0 is not a device of this runtime"));
    CHECK_THROWS_WITH(ag::broadcast(a, {device::sim(1), device::sim(1)}),
                      Contains("broadcast: sim:1 is named twice (to[0] and to[1])"));
    CHECK_THROWS_WITH(ag::broadcast(a, {device::cpu(), device::sim(2), device::sim(0),
                                        device::cpu()}),
                      Contains("broadcast: cpu is named twice (to[0] and to[3])"));
    // The source's own device named twice is refused too.
    CHECK_THROWS_WITH(ag::broadcast(a, {device::sim(0), device::sim(0)}),
                      Contains("broadcast: sim:0 is named twice (to[0] and to[1])"));
  }
  SECTION("an undefined tensor") {
    CHECK_THROWS_WITH(ag::all_reduce({a, tensor{}}),
                      Contains("all_reduce: undefined tensor (default-constructed handle)"));
    CHECK_THROWS_WITH(ag::all_gather({tensor{}, a}),
                      Contains("all_gather: undefined tensor (default-constructed handle)"));
    CHECK_THROWS_WITH(ag::reduce_scatter({tensor{}}),
                      Contains("reduce_scatter: undefined tensor (default-constructed handle)"));
    CHECK_THROWS_WITH(ag::broadcast(tensor{}, {device::sim(0)}),
                      Contains("broadcast: undefined tensor (default-constructed handle)"));
  }
  SECTION("parts of two runtimes or of a runtime that is gone") {
    tensor gone;
    {
      ag::runtime other{option(3, false)};
      const auto x = other.full({4}, 1.0f, device::sim(1));
      CHECK_THROWS_WITH(ag::all_reduce({a, x}),
                        Contains("all_reduce: runtime mismatch: part 0 (float32[4] on sim:0), "
                                 "part 1 (float32[4] on sim:1)"));
      gone = other.full({4}, 1.0f, device::sim(2));
      other.sync();
    }
    CHECK_THROWS_WITH(ag::all_reduce({gone}), Contains("all_reduce:") && Contains("outlived its runtime"));
    CHECK_THROWS_WITH(ag::broadcast(gone, {device::sim(0)}),
                      Contains("broadcast:") && Contains("outlived its runtime"));
  }

  // The runtime goes on after the calls that threw.
  CHECK(error_of([&] { rt.sync(); }).empty());
  CHECK(rt.stats().in_flight_ops == 0);
  CHECK(ag::all_reduce({a, b, h})[2].to_vector() == floats(4, 7.0f));
}

TEST_CASE("a call that throws submits nothing", "[collectives]") {
  ag::runtime rt{option(2, false)};
  const auto a = rt.full({4}, 1.0f, device::sim(0));
  const auto b5 = rt.full({5}, 1.0f, device::sim(1));
  const auto odd0 = rt.full({7}, 1.0f, device::sim(0));
  const auto odd1 = rt.full({7}, 1.0f, device::sim(1));
  const auto s0 = a.sum();
  const auto s1 = b5.sum();
  rt.sync();
  const auto before = rt.stats();
  CHECK_FALSE(error_of([&] { ag::all_reduce({a, b5}); }).empty());
  CHECK_FALSE(error_of([&] { ag::all_reduce({a, a}); }).empty());
  CHECK_FALSE(error_of([&] { ag::all_gather({s0, s1}); }).empty());
  CHECK_FALSE(error_of([&] { ag::reduce_scatter({odd0, odd1}); }).empty());
  CHECK_FALSE(error_of([&] { ag::broadcast(a, {}); }).empty());
  CHECK_FALSE(error_of([&] { ag::broadcast(a, {device::sim(7)}); }).empty());
  CHECK_FALSE(error_of([&] { ag::broadcast(a, {device::sim(1), device::sim(1)}); }).empty());
  CHECK_FALSE(error_of([&] { ag::all_reduce({a, tensor{}}); }).empty());
  rt.sync();
  const auto after = rt.stats();
  CHECK(after.operators == before.operators);
  CHECK(after.batches == before.batches);
  CHECK(after.store_live_bytes == before.store_live_bytes);
  CHECK(after.in_flight_ops == 0);
  CHECK(ag::all_reduce({odd0, odd1})[0].to_vector() == floats(7, 2.0f));
}
// -- faults ------------------------------------------------------------------------------------

TEST_CASE("a child killed while a large collective is in flight fails every result naming its "
          "device and no participant waits for it",
          "[collectives][faults]") {
  {
    // A hang would pass the 2 s deadline and fail the checks below (they want the signal).
    ag::runtime rt{option(3, true, std::size_t{4} << 20, 2000ms)};
    const int64_t n = (int64_t{1} << 22) / int64_t(tsan_shrink); // 64 chunks of 65536 elements
    std::vector<tensor> parts;
    for (int i = 0; i < 3; ++i)
      parts.push_back(rt.full({n}, float(i + 1), device::sim(i)));
    const auto small = rt.full({8}, 5.0f, device::sim(0));
    const auto host = rt.full({8}, 6.0f, device::cpu());
    rt.sync();
    const pid_t child = runner_of_lane(2); // sim:1
    REQUIRE(child > 0);
    const auto r = ag::all_reduce(parts);
    const auto g = ag::broadcast(parts[1], {device::sim(0), device::cpu(), device::sim(2)});
    ::kill(child, SIGKILL);
    for (const auto& results : {r, g})
      for (std::size_t i = 0; i < results.size(); ++i) {
        INFO("result " << i << " on " << results[i].device().str());
        CHECK_THROWS_WITH(results[i].to_vector(), Contains("sim:1") && Contains("signal 9"));
      }
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:1"));
    // Healthy devices go on: operators, and a collective among them.
    CHECK((small + small).to_vector() == floats(8, 10.0f));
    const auto healthy = ag::all_reduce({small, host, rt.full({8}, 7.0f, device::sim(2))});
    for (const auto& t : healthy)
      CHECK(t.to_vector() == floats(8, 18.0f));
    CHECK_THROWS_WITH(rt.full({1}, 1.0f, device::sim(1)).to_vector(), Contains("sim:1"));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a child killed at any moment of a collective leaves each result either whole and "
          "right or an error naming the dead device",
          "[collectives][faults]") {
  const int64_t n = (int64_t{1} << 21) / int64_t(tsan_shrink);
  for (int round = 0; round < 6; ++round) {
    const int victim = round % 3; // sim:victim, lane victim + 1
    const auto delay = std::chrono::milliseconds{(round / 3) * 7};
    INFO("round " << round << ": sim:" << victim << " killed after " << delay.count() << " ms");
    {
      ag::runtime rt{option(3, true, std::size_t{4} << 20, 2000ms)};
      std::vector<tensor> parts;
      for (int i = 0; i < 3; ++i)
        parts.push_back(rt.full({n}, float(i + 1), device::sim(i)));
      rt.sync();
      const pid_t child = runner_of_lane(victim + 1);
      REQUIRE(child > 0);
      const auto reduced = ag::all_reduce(parts);
      const auto copies = ag::broadcast(parts[2], {device::cpu(), device::sim(0), device::sim(1)});
      const auto gathered = ag::all_gather({parts[0], parts[1]});
      std::this_thread::sleep_for(delay);
      ::kill(child, SIGKILL);
      const std::string dead = "sim:" + std::to_string(victim);
      auto either = [&](const tensor& t, float value, std::size_t elems) {
        INFO("a result on " << t.device().str());
        try {
          const auto v = t.to_vector();
          CHECK(t.device().str() != dead); // what lives on the dead device cannot be read
          CHECK(v == floats(elems, value));
        } catch (const ag::error& e) {
          CHECK_THAT(e.what(), Contains(dead) && Contains("signal 9"));
        }
      };
      for (const auto& t : reduced)
        either(t, 6.0f, std::size_t(n));
      for (const auto& t : copies)
        either(t, 3.0f, std::size_t(n));
      floats cat(std::size_t(n), 1.0f);
      cat.insert(cat.end(), std::size_t(n), 2.0f);
      for (const auto& t : gathered) {
        INFO("a result on " << t.device().str());
        try {
          const auto v = t.to_vector();
          CHECK(t.device().str() != dead);
          CHECK(v == cat);
        } catch (const ag::error& e) {
          CHECK_THAT(e.what(), Contains(dead) && Contains("signal 9"));
        }
      }
      CHECK_THROWS_WITH(rt.sync(), Contains(dead));
      // The others go on.
      const int a = (victim + 1) % 3, b = (victim + 2) % 3;
      const auto healthy = ag::all_reduce({rt.full({5}, 1.0f, device::sim(a)),
                                           rt.full({5}, 2.0f, device::sim(b)),
                                           rt.full({5}, 4.0f, device::cpu())});
      for (const auto& t : healthy)
        CHECK(t.to_vector() == floats(5, 7.0f));
    }
    REQUIRE(runner_children().empty());
    REQUIRE(my_shm().empty());
  }
}

// Every result of each collective, and what is computed from it, throws naming `dead`.
void check_all_fail(const std::vector<std::vector<tensor>>& collectives, const std::string& dead) {
  for (std::size_t c = 0; c < collectives.size(); ++c)
    for (std::size_t i = 0; i < collectives[c].size(); ++i) {
      const auto& t = collectives[c][i];
      INFO("collective " << c << ", result " << i << " on " << t.device().str());
      CHECK_THROWS_WITH(t.to_vector(), Contains(dead));
      CHECK_THROWS_WITH((t + t).to_vector(), Contains(dead));
    }
}

TEST_CASE("a collective whose input was computed on a child killed before the call fails every "
          "result naming that device",
          "[collectives][faults]") {
  {
    ag::runtime rt{option(3, true, std::size_t{1} << 20, 2000ms)};
    const auto x0 = rt.full({1000}, 1.0f, device::sim(0));
    const auto x1 = rt.full({1000}, 2.0f, device::sim(1));
    const auto x2 = rt.full({1000}, 3.0f, device::sim(2));
    const auto xc = rt.full({1000}, 4.0f, device::cpu());
    rt.sync();
    const pid_t child = runner_of_lane(2); // sim:1
    REQUIRE(child > 0);
    ::kill(child, SIGKILL);
    REQUIRE(within(5000ms, [&] { return exited(child); }));
    // Until the runtime has seen the death (a read on sim:1 fails naming the signal).
    REQUIRE(within(5000ms, [&] {
      return Contains("signal 9").match(error_of([&] { rt.full({1}, 0.0f, device::sim(1)).to_vector(); }));
    }));
    const auto y1 = x1 * x1; // on the dead device
    check_all_fail({ag::all_reduce({x0, y1, x2, xc}), ag::all_gather({xc, x0, y1}),
                    ag::reduce_scatter({y1, x2}), ag::broadcast(y1, {device::sim(0), device::cpu()})},
                   "sim:1");
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:1"));
    const auto ok = ag::all_gather({x2, xc, x0});
    floats ref(1000, 3.0f);
    ref.insert(ref.end(), 1000, 4.0f);
    ref.insert(ref.end(), 1000, 1.0f);
    for (const auto& t : ok)
      CHECK(t.to_vector() == ref);
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a collective placed before its input's child is killed fails every result naming "
          "that device",
          "[collectives][faults]") {
  {
    ag::runtime rt{option(3, true, std::size_t{1} << 20, 2000ms)};
    const auto x0 = rt.full({1000}, 1.0f, device::sim(0));
    const auto x1 = rt.full({1000}, 2.0f, device::sim(1));
    const auto x2 = rt.full({1000}, 3.0f, device::sim(2));
    const auto xc = rt.full({1000}, 4.0f, device::cpu());
    rt.sync();
    const pid_t child = runner_of_lane(2); // sim:1
    REQUIRE(child > 0);
    // Stopped: its lane looks alive, so each collective below is placed whole (one chunk), and
    // its staging copy of y1 waits on sim:1.
    REQUIRE(stop_process(child));
    const auto y1 = x1 * x1;
    std::vector<std::vector<tensor>> collectives{
      ag::all_reduce({x0, y1, xc}), ag::all_gather({xc, y1, x0}), ag::reduce_scatter({y1, x0}),
      ag::broadcast(y1, {device::sim(0), device::cpu()})};
    // sim:2 takes no part: once it answers, the executor has placed every collective above.
    CHECK((x2 + x2).to_vector() == floats(1000, 6.0f));
    ::kill(child, SIGKILL);
    check_all_fail(collectives, "sim:1");
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:1"));
    const auto ok = ag::all_reduce({x2, xc, x0});
    for (const auto& t : ok)
      CHECK(t.to_vector() == floats(1000, 8.0f));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

// -- a cpu result without store room -----------------------------------------------------------

TEST_CASE("a collective whose cpu result finds no store room fails with store full and leaves "
          "every other tensor intact",
          "[collectives]") {
  // 1 MiB store, 4 parts: the all_gather's cpu result (4 x 52428 floats, 819 KiB) cannot have a
  // range while the cpu part and the all_reduce's cpu result (205 KiB each) are held, and no
  // acknowledgement can free one: it fails at once with store full.
  const std::size_t store = std::size_t{1} << 20;
  const std::vector<device> places{device::sim(2), device::cpu(), device::sim(0), device::sim(1)};
  const int64_t n = 4 * chunk_of(store, places.size());
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      ag::runtime rt{option(3, process, store)};
      const auto g = make_group(rt, places, {n}, 300);
      const auto sum = host_sum(g.host);
      const auto reduced = ag::all_reduce(g.parts);
      const auto gathered = ag::all_gather(g.parts);
      for (std::size_t i = 0; i < gathered.size(); ++i) {
        INFO("all_gather result " << i);
        CHECK_THROWS_WITH(gathered[i].to_vector(), Contains("store full") && Contains("all_gather"));
      }
      // What the store held before is as it was.
      CHECK(same_bits(g.parts[1].to_vector(), g.host[1]));
      for (std::size_t i = 0; i < reduced.size(); ++i) {
        INFO("all_reduce result " << i << " on " << reduced[i].device().str());
        CHECK(same_bits(reduced[i].to_vector(), sum));
      }
      CHECK_THROWS_WITH(rt.sync(), Contains("store full"));
      // Later collectives still work.
      const auto again = ag::all_reduce(g.parts);
      for (const auto& t : again)
        CHECK(same_bits(t.to_vector(), sum));
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}
