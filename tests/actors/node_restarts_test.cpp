// Restarts on a node (graph_option::max_restarts): a node's child killed again and again while
// threads submit is started again by its node each time; store bytes go to the new child and come
// back from it (Data-in and Data-out count afresh), what lived on the dead child is lost and says
// so, the other device goes on, and past the bound the device stays failed.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/node_helpers.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/submitters.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using ag::test::node_process;
using ag::test::tsan_slow;

namespace {

// The node's child of lane 1 once it is another than `old` (0: any), within the deadline.
pid_t next_node_child(const node_process& n, pid_t old) {
  pid_t now = 0;
  ag::test::within(std::chrono::milliseconds{30000 * tsan_slow}, [&] {
    now = ag::test::runner_of_lane(1, n.pid());
    return now > 0 && now != old;
  });
  return now == old ? 0 : now;
}

} // namespace

TEST_CASE("a node's child killed again and again while threads submit is started again by its "
          "node each time",
          "[nodes][restarts]") {
  ag::test::key_ring keys;
  const std::string ctl = keys.make("ctl");
  const std::string k1 = keys.make("n1");
  node_process n1{"n1", k1, {ctl}};
  ag::graph_option opt;
  opt.per_device_per_process = true;
  opt.runner_path = AG_TEST_RUNNER;
  opt.key_file = ctl + ".secret";
  opt.devices = ag::parse_devices("n1/sim:0,sim:0");
  opt.store_bytes = std::size_t{64} << 20;
  opt.node_timeout = 5000ms * tsan_slow;
  opt.wait_timeout = 60000ms * tsan_slow;
  opt.start_timeout = 60000ms * tsan_slow;
  opt.max_restarts = 3;
  opt.nodes.push_back(n1.as_node(k1));
  const auto remote = ag::parse_device("n1/sim:0");
  const auto local = ag::parse_device("sim:0");
  constexpr int kills = 3;
  {
    ag::runtime rt{opt};
    // Data-in (the upload) and Data-out (the read) of the node's lane.
    ag::test::submitters load{2, "n1/sim:0", [&](int t, int i) {
                                const float v = static_cast<float>(t * 1000 + i % 1000);
                                auto x = rt.from_vector({512}, std::vector<float>(512, v), remote);
                                return (x * 2.0f).to_vector() == std::vector<float>(512, 2 * v);
                              }};
    pid_t child = next_node_child(n1, 0);
    REQUIRE(child > 0);
    auto lost = rt.full({16}, 7.0f, remote);
    REQUIRE(lost.to_vector() == std::vector<float>(16, 7.0f));
    for (int k = 1; k <= kills; ++k) {
      INFO("kill " << k);
      REQUIRE(load.more_good(3, std::chrono::milliseconds{60000 * tsan_slow}));
      REQUIRE(::kill(child, SIGKILL) == 0);
      child = next_node_child(n1, child);
      REQUIRE(child > 0);
      REQUIRE(ag::test::within(std::chrono::milliseconds{60000 * tsan_slow}, [&] {
        return rt.stats().restarts == static_cast<std::size_t>(k);
      }));
    }
    REQUIRE(load.more_good(3, std::chrono::milliseconds{60000 * tsan_slow}));
    load.stop();
    for (const auto& o : load.odd())
      CHECK(o.empty());
    CHECK(load.wrong() == 0);
    CHECK_THROWS_WITH(lost.to_vector(), Contains("lost when n1/sim:0 was restarted"));
    try { // the failures are reported once, by the next sync
      rt.sync();
    } catch (const ag::error&) {
    }
    auto here = rt.full({8}, 3.0f, local);
    CHECK((here.to(remote) + 1.0f).to(local).to_vector() == std::vector<float>(8, 4.0f));
    CHECK_NOTHROW(rt.sync());
    CHECK(rt.stats().restarts == kills);
  }
  CHECK(ag::test::runner_children().empty());
  // The node is ready for the next controller once this one is gone.
  CHECK(ag::test::within(std::chrono::milliseconds{20000 * tsan_slow},
                         [&] { return ag::test::runner_children(n1.pid()).empty(); }));
}
