// Devices on other machines, on one machine: ag-node processes on 127.0.0.1 with identities made
// by ag-keygen, serving a runtime whose devices are NAME/sim:N. Results across nodes match thread
// mode bit for bit, large tensors travel in pieces, and every fault (a node's child killed, a
// node killed or stopped, a second controller) gives an ag::error naming the node and device
// within its deadline while the other nodes' devices keep working.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/node_helpers.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/random_program.hpp"
#include "ipc/sub_process.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using ag::test::node_process;

namespace {

struct cluster {
  ag::test::key_ring keys;
  std::string ctl = keys.make("ctl");
  std::string k1 = keys.make("n1");
  std::string k2 = keys.make("n2");
};

ag::graph_option option(const cluster& c, std::vector<const node_process*> nodes,
                        const std::string& devices) {
  ag::graph_option opt;
  opt.per_device_per_process = true;
  opt.runner_path = AG_TEST_RUNNER;
  opt.key_file = c.ctl + ".secret";
  opt.devices = ag::parse_devices(devices);
  opt.store_bytes = std::size_t{256} << 20;
  opt.node_timeout = 5000ms * ag::test::tsan_slow;
  opt.progress_timeout = 10000ms * ag::test::tsan_slow;
  opt.wait_timeout = 60000ms * ag::test::tsan_slow;
  if (ag::test::tsan_slow > 1)
    opt.node_streams = 2;
  const std::string* keys[] = {&c.k1, &c.k2};
  for (std::size_t i = 0; i < nodes.size(); ++i)
    opt.nodes.push_back(nodes[i]->as_node(*keys[i]));
  return opt;
}

} // namespace

TEST_CASE("a random program across two nodes gives the results of thread mode, bit for bit",
          "[nodes]") {
  cluster c;
  node_process n1{"n1", c.k1, {c.ctl}};
  node_process n2{"n2", c.k2, {c.ctl}};
  for (uint32_t seed : {3u, 17u}) {
    INFO("seed " << seed);
    ag::test::program_result across, local;
    {
      ag::runtime rt{option(c, {&n1, &n2}, "sim:0,n1/sim:0,n1/sim:1,n2/sim:0")};
      REQUIRE(ag::to_string(rt.devices()) == "sim:0,n1/sim:0,n1/sim:1,n2/sim:0");
      across = ag::test::run_random_program(rt, seed, 120);
    }
    {
      ag::graph_option opt;
      opt.devices = ag::parse_devices("sim:0,sim:1,sim:2,sim:3");
      ag::runtime rt{opt};
      local = ag::test::run_random_program(rt, seed, 120);
    }
    REQUIRE(across.values.size() == local.values.size());
    for (std::size_t i = 0; i < across.values.size(); ++i) {
      INFO("value " << i);
      CHECK(ag::test::same_bits(across.values[i], local.values[i]));
      CHECK(ag::test::same_bits(across.values[i], across.reference[i]));
    }
  }
  CHECK(ag::test::runner_children(n1.pid()).empty());
  CHECK(ag::test::runner_children(n2.pid()).empty());
  CHECK(n1.stop() == 0);
  CHECK(n2.stop() == 0);
}

TEST_CASE("a tensor of many pieces goes to a node, between nodes and back", "[nodes]") {
  cluster c;
  node_process n1{"n1", c.k1, {c.ctl}};
  node_process n2{"n2", c.k2, {c.ctl}};
  ag::runtime rt{option(c, {&n1, &n2}, "n1/sim:0,n2/sim:0")};
  const std::size_t n = (std::size_t{24} << 20) / sizeof(float) + 3; // 24 MiB: 7 pieces
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(i % 9973) * 0.5f;
  const auto n1d = ag::parse_device("n1/sim:0");
  const auto n2d = ag::parse_device("n2/sim:0");
  auto x = rt.from_vector({int64_t(n)}, v, n1d);
  auto y = (x + x).to(n2d);
  auto back = y.to(ag::device::cpu()).to_vector();
  REQUIRE(back.size() == n);
  bool same = true;
  for (std::size_t i = 0; i < n && same; ++i)
    same = back[i] == v[i] + v[i];
  CHECK(same);
  CHECK(y.to_vector() == back);
}

TEST_CASE("downloads from a node come back whole over none, one, three or eight return streams",
          "[nodes]") {
  cluster c;
  node_process n1{"n1", c.k1, {c.ctl}};
  for (std::size_t streams : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{8}}) {
    INFO(streams << " streams");
    auto opt = option(c, {&n1}, "n1/sim:0");
    opt.node_streams = streams;
    ag::runtime rt{opt};
    const auto d = ag::parse_device("n1/sim:0");
    const std::size_t n = (std::size_t{18} << 20) / sizeof(float) + 5; // 5 pieces
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = static_cast<float>(i % 100003);
    auto x = rt.from_vector({int64_t(n)}, v, d);
    auto y = x + x;
    // Two downloads in one batch, and the read of a device tensor.
    auto hx = x.to(ag::device::cpu());
    auto hy = y.to(ag::device::cpu());
    const auto vx = hx.to_vector();
    const auto vy = hy.to_vector();
    REQUIRE(vx.size() == n);
    bool same = true;
    for (std::size_t i = 0; i < n && same; ++i)
      same = vx[i] == v[i] && vy[i] == v[i] + v[i];
    CHECK(same);
    CHECK(y.to_vector() == vy);
  }
  CHECK(n1.stop() == 0);
}

TEST_CASE("a node serves one controller at a time and the next once the first is gone",
          "[nodes]") {
  cluster c;
  node_process n1{"n1", c.k1, {c.ctl}};
  {
    ag::runtime first{option(c, {&n1}, "n1/sim:0")};
    CHECK(first.full({4}, 2.0f, ag::parse_device("n1/sim:0")).to_vector()
          == std::vector<float>(4, 2.0f));
    // The second controller in a process of its own.
    CHECK_THAT(ag::test::refused_controller(n1.as_node(c.k1), c.ctl, 10000ms * ag::test::tsan_slow,
                                            30000ms * ag::test::tsan_slow),
               Contains("node n1 serves another controller"));
    CHECK(first.full({4}, 3.0f, ag::parse_device("n1/sim:0")).to_vector()
          == std::vector<float>(4, 3.0f));
  }
  CHECK(ag::test::within(5000ms, [&] { return ag::test::runner_children(n1.pid()).empty(); }));
  ag::runtime next{option(c, {&n1}, "n1/sim:0,n1/sim:1")};
  CHECK(next.full({4}, 5.0f, ag::parse_device("n1/sim:1")).to_vector()
        == std::vector<float>(4, 5.0f));
}

TEST_CASE("a stranger refused at the handshake leaves the node's link to its controller as it was",
          "[nodes]") {
  cluster c;
  const auto stranger = c.keys.make("stranger");
  node_process n1{"n1", c.k1, {c.ctl}};
  ag::runtime rt{option(c, {&n1}, "n1/sim:0")};
  const auto d = ag::parse_device("n1/sim:0");
  REQUIRE(rt.full({4}, 1.0f, d).to_vector() == std::vector<float>(4, 1.0f));
  // The stranger in a process of its own.
  CHECK_THAT(ag::test::refused_controller(n1.as_node(c.k1), stranger, 5000ms * ag::test::tsan_slow,
                                          30000ms * ag::test::tsan_slow),
             Contains("node n1"));
  // The node's middleman reads the controller's link again at its next heartbeat (every 200 ms):
  // after several, the link and the node's children are still there.
  std::this_thread::sleep_for(1000ms);
  CHECK(rt.full({4}, 2.0f, d).to_vector() == std::vector<float>(4, 2.0f));
  CHECK(ag::test::runner_children(n1.pid()).size() == 1);
}

TEST_CASE("a controller a node does not allow, or a node the controller does not trust, is "
          "refused at start-up naming the node",
          "[nodes]") {
  cluster c;
  const auto stranger = c.keys.make("stranger");
  SECTION("the node does not allow the controller's key") {
    node_process n1{"n1", c.k1, {stranger}};
    auto opt = option(c, {&n1}, "n1/sim:0");
    opt.start_timeout = 5000ms * ag::test::tsan_slow;
    CHECK_THROWS_WITH(ag::runtime{opt}, Contains("node n1"));
    CHECK(ag::test::runner_children(n1.pid()).empty());
  }
  SECTION("the node proves another identity than the controller was given") {
    node_process n1{"n1", stranger, {c.ctl}};
    auto opt = option(c, {&n1}, "n1/sim:0");
    opt.start_timeout = 5000ms * ag::test::tsan_slow;
    CHECK_THROWS_WITH(ag::runtime{opt}, Contains("node n1"));
    CHECK(ag::test::runner_children(n1.pid()).empty());
  }
  SECTION("nothing listens where the node should be") {
    ag::node gone{"n1", "tcp://127.0.0.1:1", c.k1 + ".public"};
    auto opt = option(c, {}, "n1/sim:0");
    opt.nodes = {gone};
    opt.start_timeout = 5000ms * ag::test::tsan_slow;
    CHECK_THROWS_WITH(ag::runtime{opt}, Contains("node n1 (tcp://127.0.0.1:1)"));
  }
}

TEST_CASE("a program that loads libssl before libactorgraph is refused nodes, saying why",
          "[nodes]") {
  cluster c;
  const auto log = c.keys.dir.file("ssl-first.log");
  const int code = ag::test::run_program({AG_TEST_SSL_FIRST, c.ctl + ".secret", c.k1 + ".public"},
                                         log);
  std::ifstream in{log};
  const std::string said{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  INFO(said);
  CHECK(code == 0);
  CHECK_THAT(said, Contains("link actorgraph before OpenSSL"));
}

TEST_CASE("options for nodes that cannot work are refused naming what is wrong", "[nodes]") {
  cluster c;
  ag::graph_option opt;
  opt.per_device_per_process = true;
  opt.key_file = c.ctl + ".secret";
  opt.devices = ag::parse_devices("n9/sim:0");
  CHECK_THROWS_WITH(ag::runtime{opt}, Contains("node n9 is not in graph_option::nodes"));
  opt.nodes = {{"n9", "udp://x:1", c.k1 + ".public"}};
  CHECK_THROWS_WITH(ag::runtime{opt}, Contains("not a tcp:// endpoint"));
  opt.nodes = {{"n9", "tcp://127.0.0.1:7", c.k1 + ".public"}};
  opt.key_file.clear();
  CHECK_THROWS_WITH(ag::runtime{opt}, Contains("graph_option::key_file"));
  opt.key_file = c.ctl + ".secret";
  opt.per_device_per_process = false;
  CHECK_THROWS_WITH(ag::runtime{opt}, Contains("process mode"));
}

TEST_CASE("a child killed on a node fails that device naming it, and the other node works on",
          "[nodes]") {
  cluster c;
  node_process n1{"n1", c.k1, {c.ctl}};
  node_process n2{"n2", c.k2, {c.ctl}};
  auto opt = option(c, {&n1, &n2}, "n1/sim:0,n2/sim:0");
  opt.wait_timeout = 5000ms * ag::test::tsan_slow;
  ag::runtime rt{opt};
  const auto a = ag::parse_device("n1/sim:0");
  const auto b = ag::parse_device("n2/sim:0");
  REQUIRE(rt.full({4}, 1.0f, a).to_vector() == std::vector<float>(4, 1.0f));
  const pid_t child = ag::test::runner_of_lane(1, n1.pid());
  REQUIRE(child > 0);
  ::kill(child, SIGKILL);
  CHECK_THROWS_WITH(rt.full({4}, 1.0f, a).to_vector(), Contains("n1/sim:0") && Contains("signal 9"));
  CHECK(rt.full({4}, 7.0f, b).to_vector() == std::vector<float>(4, 7.0f));
}

TEST_CASE("a node killed, or stopped, fails its devices within the deadline naming it, and the other "
          "node works on",
          "[nodes]") {
  cluster c;
  node_process n1{"n1", c.k1, {c.ctl}};
  node_process n2{"n2", c.k2, {c.ctl}};
  auto opt = option(c, {&n1, &n2}, "n1/sim:0,n2/sim:0");
  opt.wait_timeout = 20000ms * ag::test::tsan_slow;
  opt.node_timeout = 1500ms * ag::test::tsan_slow;
  ag::runtime rt{opt};
  const auto a = ag::parse_device("n1/sim:0");
  const auto b = ag::parse_device("n2/sim:0");
  REQUIRE(rt.full({4}, 1.0f, a).to_vector() == std::vector<float>(4, 1.0f));
  const auto t0 = std::chrono::steady_clock::now();
  bool frozen = false;
  SECTION("killed") { n1.kill(); }
  SECTION("stopped, with its children") {
    REQUIRE(n1.freeze());
    frozen = true;
  }
  CHECK_THROWS_WITH(rt.full({4}, 1.0f, a).to_vector(), Contains("n1/sim:0"));
  if (frozen) // silent, not gone: the error says which deadline passed
    CHECK_THROWS_WITH(rt.sync(), Contains("graph_option::node_timeout")
                                   && !Contains("remote_link_unreachable"));
  CHECK(std::chrono::steady_clock::now() - t0 < 10s * ag::test::tsan_slow); // not the wait's
  // The other node's link is read again at each heartbeat (every 200 ms): after several, it and
  // its children are still there.
  std::this_thread::sleep_for(1000ms);
  CHECK(rt.full({4}, 7.0f, b).to_vector() == std::vector<float>(4, 7.0f));
  CHECK(ag::test::runner_children(n2.pid()).size() == 1);
}

TEST_CASE("a controller killed, or silent: its children on the node exit within 2 s of the node's "
          "deadline, and the node serves the next controller",
          "[nodes]") {
  cluster c;
  node_process n1{"n1", c.k1, {c.ctl}, 1000 * ag::test::tsan_slow};
  ag::test::private_tmpdir tmp;
  const auto node = n1.as_node(c.k1);
  ::setenv("AG_TEST_NODE", (node.name + "=" + node.endpoint + "=" + node.public_key_file).c_str(), 1);
  ::setenv("AG_TEST_KEY", (c.ctl + ".secret").c_str(), 1);
  auto controller = ag::sub_process::spawn(AG_TEST_CONTROLLER, {tmp.path, "2"});
  ::unsetenv("AG_TEST_NODE");
  ::unsetenv("AG_TEST_KEY");
  REQUIRE(ag::test::within(20000ms * ag::test::tsan_slow, [&] {
    return ::access((tmp.path + "/ready").c_str(), F_OK) == 0;
  }));
  const auto children = ag::test::runner_children(n1.pid());
  REQUIRE(children.size() == 2);
  SECTION("killed") {
    controller.kill(SIGKILL);
    REQUIRE(controller.wait_for(5000ms));
  }
  SECTION("silent (stopped)") { REQUIRE(ag::test::stop_process(controller.pid())); }
  // The node's deadline (1 s of silence, or at once on a closed connection), then 2 s.
  CHECK(ag::test::all_exited_within(3000ms * ag::test::tsan_slow, children));
  if (!controller.wait_for(0ms)) { // the stopped one
    controller.kill(SIGKILL);
    ::kill(controller.pid(), SIGCONT);
    REQUIRE(controller.wait_for(5000ms));
  }
  ::unlink((tmp.path + "/ready").c_str());
  ag::runtime next{option(c, {&n1}, "n1/sim:0")};
  CHECK(next.full({2}, 4.0f, ag::parse_device("n1/sim:0")).to_vector()
        == std::vector<float>(2, 4.0f));
}

TEST_CASE("the golden traces replay with their device lanes on two nodes, to their digests",
          "[nodes][trace]") {
  cluster c;
  node_process n1{"n1", c.k1, {c.ctl}};
  node_process n2{"n2", c.k2, {c.ctl}};
  const auto a = n1.as_node(c.k1);
  const auto b = n2.as_node(c.k2);
  const std::string nodes = "--nodes=" + a.name + "=" + a.endpoint + "=" + a.public_key_file + ","
                            + b.name + "=" + b.endpoint + "=" + b.public_key_file;
  const std::string traces = AG_TEST_TRACES;
  for (auto [name, devices] : {std::pair{"demo-process", "n1/sim:0"},
                               std::pair{"random-process", "n1/sim:0,n2/sim:0,n1/sim:1"},
                               std::pair{"random-thread", "n2/sim:0,n1/sim:0"}}) {
    INFO(name << " on " << devices);
    const auto log = c.keys.dir.file(std::string{name} + ".log");
    const int code = ag::test::run_program(
      {AG_TEST_REPLAY, traces + "/" + name + ".trace", "--mode=process",
       std::string{"--devices="} + devices, nodes, "--key=" + c.ctl + ".secret",
       "--runner=" AG_TEST_RUNNER, "--expect=" + traces + "/" + name + ".digests",
       "--timeout=" + std::to_string(60000 * ag::test::tsan_slow)},
      log);
    std::ifstream in{log};
    std::string line, tail;
    while (std::getline(in, line))
      if (line.rfind("read #", 0) != 0 && line.rfind("live #", 0) != 0)
        tail += line + "\n";
    INFO(tail);
    CHECK(code == 0);
  }
}
