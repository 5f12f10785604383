// Backpressure end to end, in both modes: a flood of operators without reads keeps the work in
// flight within its bound and kills nobody; uploads into a full store wait for the
// acknowledgements that free it; a wait for space ends at its deadline naming the store.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using namespace std::chrono_literals;
using Catch::Contains;

namespace {

ag::graph_option option(bool process, const char* devices = "sim:0,sim:1") {
  return sim_options(process, devices, 30s);
}

} // namespace

TEST_CASE("a flood of tiny operators without reads stays within the in-flight bound and every "
          "child stays alive",
          "[backpressure][process]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  auto opt = option(process);
  opt.max_in_flight_ops = 64;
  {
    ag::runtime rt{opt};
    const auto a = rt.full({16}, 1.0f, ag::device::sim(0));
    const auto b = rt.full({16}, 2.0f, ag::device::sim(1));
    ag::tensor x, y;
    std::size_t most_in_flight = 0;
    for (int i = 0; i < static_cast<int>(40000 / tsan_shrink); ++i) {
      x = a + a;
      y = b + b;
      if (i % 500 == 0)
        most_in_flight = std::max(most_in_flight, rt.stats().in_flight_ops);
    }
    // Each device's share is bounded; the cpu lane holds none of these.
    CHECK(most_in_flight <= 2 * opt.max_in_flight_ops);
    CHECK(x.to(ag::device::cpu()).to_vector() == std::vector<float>(16, 2.0f));
    CHECK(y.to(ag::device::cpu()).to_vector() == std::vector<float>(16, 4.0f));
    rt.sync();
    const auto s = rt.stats();
    CHECK(s.blocked_submits > 0); // the bound was reached and held the submitter back
    CHECK(s.in_flight_ops == 0);
    if (process)
      CHECK(runner_children().size() == 2);
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("uploads into a full store wait for acknowledgements instead of failing",
          "[backpressure][process]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  auto opt = option(process, "sim:0");
  // Under ThreadSanitizer, fewer uploads, and the store and each upload a quarter as large: the
  // store still overflows 2.5 times, at a cost its instrumented copies pay within the deadlines.
  constexpr std::size_t scale = tsan_shrink > 1 ? 4 : 1;
  constexpr std::size_t elems = 256 * 1024 / scale;
  opt.store_bytes = (std::size_t{16} << 20) / scale;
  {
    ag::runtime rt{opt};
    std::vector<ag::tensor> kept;
    const int uploads = static_cast<int>(320 / tsan_shrink); // 320 MiB through 16 MiB
    for (int i = 0; i < uploads; ++i) { // no sync between
      auto t = rt.from_vector({elems}, std::vector<float>(elems, float(i)), ag::device::sim(0));
      if (i % 10 == 0)
        kept.push_back(t);
    }
    rt.sync();
    for (std::size_t k = 0; k < kept.size(); ++k) {
      const auto v = kept[k].sum().to(ag::device::cpu()).to_vector();
      CHECK(v == std::vector<float>{float(k * 10) * float(elems)});
    }
  }
  CHECK(my_shm().empty());
}

TEST_CASE("a move to the cpu waits for store space that acknowledgements free", "[backpressure]") {
  auto opt = option(false, "sim:0");
  opt.store_bytes = std::size_t{4} << 20;
  ag::runtime rt{opt};
  const auto x = rt.full({512 * 1024}, 3.0f, ag::device::sim(0)); // 2 MiB
  for (int i = 0; i < 20; ++i) { // each 2 MiB cpu copy is dropped at once; its range frees later
    auto c = x.to(ag::device::cpu());
  }
  CHECK(x.to(ag::device::cpu()).to_vector() == std::vector<float>(512 * 1024, 3.0f));
}

TEST_CASE("an operator whose store space never frees fails at wait_timeout naming the store",
          "[backpressure][process]") {
  auto opt = option(true, "sim:0");
  opt.store_bytes = std::size_t{4} << 20;
  opt.wait_timeout = 1000ms;
  opt.progress_timeout = std::chrono::milliseconds::max(); // the stopped child stays
  {
    ag::runtime rt{opt};
    const pid_t child = runner_of_lane(1);
    REQUIRE(child > 0);
    REQUIRE(stop_process(child));
    // The first upload's staging range is freed only when the stopped child acknowledges.
    auto first = rt.from_vector({768 * 1024}, std::vector<float>(768 * 1024, 1.0f),
                                ag::device::sim(0));
    auto second = rt.from_vector({768 * 1024}, std::vector<float>(768 * 1024, 2.0f),
                                 ag::device::cpu());
    CHECK_THROWS_WITH(second.to_vector(),
                      Contains("store full") && Contains("from_vector")
                        && Contains("no acknowledgement freed enough within 1000 ms"));
    // A cpu tensor larger than the whole store fails at once: no wait could make room for it.
    CHECK_THROWS_WITH(rt.full({2 * 1024 * 1024}, 1.0f, ag::device::cpu()).to_vector(),
                      Contains("store full") && Contains("store_bytes"));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}
