// Tests of actors/subscription_gate: which subscriptions a node's child may make, and, with real
// CURVE sockets over TCP loopback behind the ZAP handler, that a node subscribing to another
// node's lane (or to everything) receives none of its store bytes while the lane's own node does.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "actors/subscription_gate.hpp"
#include "ipc/wire.hpp"
#include "ipc/zap_handler.hpp"
#include "ipc/zmq_sockets.hpp"
#include "tests/ipc/curve_test_keys.hpp"

using namespace std::chrono_literals;
namespace wire = ag::wire;
namespace zmqs = ag::zmqs;

namespace {

std::string prefix(wire::msg_type t, uint32_t lane = 0) {
  return std::string(wire::encode_header({t, 0, lane}).data(), lane == 0 ? 4 : 8);
}

} // namespace

TEST_CASE("a node may subscribe to every child's messages and to its own lanes' store bytes only",
          "[nodes]") {
  const ag::subscription_gate gate{{"", "n1", "n2", ""}}; // lane 3 is this machine's
  for (bool stream : {false, true}) {
    INFO((stream ? "a data stream" : "the broadcast"));
    CHECK(gate.allows("n1", prefix(wire::msg_type::hello), stream));
    CHECK(gate.allows("n1", prefix(wire::msg_type::data_in, 1), stream));
    CHECK(gate.allows("n2", prefix(wire::msg_type::data_in, 2), stream));
    CHECK_FALSE(gate.allows("n2", prefix(wire::msg_type::data_in, 1), stream)); // n1's
    CHECK_FALSE(gate.allows("n1", prefix(wire::msg_type::data_in, 3), stream)); // this machine's
    CHECK_FALSE(gate.allows("n1", prefix(wire::msg_type::data_in), stream));    // every lane's
    CHECK_FALSE(gate.allows("n1", "", stream));                                  // everything
    CHECK_FALSE(gate.allows("n1", "A", stream));
    CHECK_FALSE(gate.allows("", prefix(wire::msg_type::hello), stream));         // nobody's
    CHECK(gate.allows("n1", prefix(wire::msg_type::execute), stream) == !stream);
    CHECK(gate.allows("n1", prefix(wire::msg_type::destroy), stream) == !stream);
    CHECK(gate.allows("n1", prefix(wire::msg_type::data_sent, 1), stream) == !stream);
    CHECK_FALSE(gate.allows("n2", prefix(wire::msg_type::data_sent, 1), stream));
  }
}

TEST_CASE("a node subscribing to another node's lane, or to everything, gets none of its bytes",
          "[nodes]") {
  zmq::context_t ctx{1};
  ag::test::curve_key_pair server, k1, k2;
  ag::zap_handler zap{ctx, {{k1.pub, "n1"}, {k2.pub, "n2"}}, [](const std::string&) {}};
  const zmqs::curve_keys server_keys{server.pub, server.sec, ""};
  auto pub = zmqs::gated_publisher(ctx, "tcp://127.0.0.1:0", &server_keys);
  const std::string at = "tcp://127.0.0.1:" + std::to_string(zmqs::bound_port(pub));
  const zmqs::curve_keys keys1{k1.pub, k1.sec, server.pub}, keys2{k2.pub, k2.sec, server.pub};
  const auto lane1 = prefix(wire::msg_type::data_in, 1);
  auto own = zmqs::subscriber(ctx, at, &keys1, {lane1, prefix(wire::msg_type::hello)});
  auto thief = zmqs::subscriber(ctx, at, &keys2, {lane1, std::string{}});
  const ag::subscription_gate gate{{"", "n1", "n2"}};
  std::vector<std::string> refused;
  const auto hello = wire::encode_header({wire::msg_type::hello, 1});
  // What the publisher does while start-up lasts: admit, then a Hello, until n1's child hears it.
  bool heard = false;
  for (int i = 0; i < 500 && !heard; ++i) {
    gate.admit(pub, false, [&](const std::string& line) { refused.push_back(line); });
    pub.send(zmq::buffer(hello.data(), hello.size()), zmq::send_flags::none);
    zmq::message_t m;
    heard = own.recv(m, zmq::recv_flags::dontwait).has_value();
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(heard);
  for (int i = 0; i < 50 && refused.size() < 2; ++i) { // both of n2's subscriptions
    gate.admit(pub, false, [&](const std::string& line) { refused.push_back(line); });
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(refused.size() == 2);
  for (const auto& r : refused)
    CHECK_THAT(r, Catch::Contains("node \"n2\"") && Catch::Contains("not its own"));
  // Lane 1's store bytes: n1's child gets them, n2's nothing at all.
  const auto data = wire::encode_header({wire::msg_type::data_in, 1, 1});
  pub.send(zmq::buffer(data.data(), data.size()), zmq::send_flags::none);
  zmq::message_t m;
  own.set(zmq::sockopt::rcvtimeo, 2000);
  bool got = false;
  while (own.recv(m))
    if (m.size() == data.size() && std::string(static_cast<const char*>(m.data()), 8) == lane1) {
      got = true;
      break;
    }
  CHECK(got);
  thief.set(zmq::sockopt::rcvtimeo, 300);
  CHECK_FALSE(thief.recv(m).has_value());
}
