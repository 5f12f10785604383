// A node behind a real link: ag-node in a network namespace of its own, joined to this one by a
// veth pair, whose link is then cut. Needs the right to make namespaces and links (root, or
// CAP_NET_ADMIN) and iproute2's ip: ctest runs these as netns-tests, reported skipped (exit 77)
// where the machine does not allow them (tests/main.cpp, AG_SKIP_WITHOUT_NETNS).
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/node_helpers.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using ag::test::node_process;

namespace {

int sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

// A namespace NS with the address 10.77.N.2, reached from here at 10.77.N.1 over veth HOST.
struct netns_link {
  const int net = static_cast<int>(::getpid() % 250) + 1;
  const std::string ns = "ag-test-" + std::to_string(::getpid());
  const std::string host = "agh" + std::to_string(::getpid());
  const std::string peer = "agp" + std::to_string(::getpid());
  const std::string here = "10.77." + std::to_string(net) + ".1";
  const std::string there = "10.77." + std::to_string(net) + ".2";

  netns_link() {
    REQUIRE(sh("ip netns add " + ns) == 0);
    REQUIRE(sh("ip link add " + host + " type veth peer name " + peer) == 0);
    REQUIRE(sh("ip link set " + peer + " netns " + ns) == 0);
    REQUIRE(sh("ip addr add " + here + "/24 dev " + host) == 0);
    REQUIRE(sh("ip link set " + host + " up") == 0);
    REQUIRE(sh("ip netns exec " + ns + " ip addr add " + there + "/24 dev " + peer) == 0);
    REQUIRE(sh("ip netns exec " + ns + " ip link set " + peer + " up") == 0);
    REQUIRE(sh("ip netns exec " + ns + " ip link set lo up") == 0);
  }
  ~netns_link() {
    sh("ip link del " + host);
    sh("ip netns del " + ns);
  }
  void cut() { REQUIRE(sh("ip link set " + host + " down") == 0); }
  std::vector<std::string> run_inside() const { return {"/usr/sbin/ip", "netns", "exec", ns}; }
};

} // namespace

TEST_CASE("a node in another network namespace works, and a cut link fails its devices within the "
          "node deadline while the other node works on",
          "[netns]") {
  netns_link link;
  ag::test::key_ring keys;
  const auto ctl = keys.make("ctl");
  const auto k1 = keys.make("n1");
  const auto k2 = keys.make("n2");
  const int deadline_ms = 1500 * ag::test::tsan_slow;
  node_process n1{"n1", k1, {ctl}, deadline_ms, link.there, link.run_inside()};
  node_process n2{"n2", k2, {ctl}, deadline_ms};
  ag::graph_option opt;
  opt.per_device_per_process = true;
  opt.runner_path = AG_TEST_RUNNER;
  opt.key_file = ctl + ".secret";
  opt.nodes = {n1.as_node(k1), n2.as_node(k2)};
  opt.devices = ag::parse_devices("n1/sim:0,n2/sim:0");
  opt.store_bytes = std::size_t{64} << 20;
  opt.node_timeout = std::chrono::milliseconds{deadline_ms};
  opt.wait_timeout = 20000ms * ag::test::tsan_slow;
  opt.progress_timeout = 10000ms * ag::test::tsan_slow;
  ag::runtime rt{opt};
  const auto a = ag::parse_device("n1/sim:0");
  const auto b = ag::parse_device("n2/sim:0");
  std::vector<float> v(1 << 20);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = float(i);
  auto x = rt.from_vector({int64_t(v.size())}, v, a);
  CHECK((x + x).to(ag::device::cpu()).to_vector()[12345] == 24690.0f);
  link.cut();
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH((x * x).to_vector(), Contains("n1/sim:0"));
  CHECK(std::chrono::steady_clock::now() - t0 < 10s * ag::test::tsan_slow); // not the wait's
  CHECK(rt.full({4}, 7.0f, b).to_vector() == std::vector<float>(4, 7.0f));
}
