// Tests of ipc/zap_handler.cpp with real CURVE sockets over TCP loopback: an allowed key gets in
// and its messages carry its name; an unknown key, a plaintext peer and a peer that expects
// another server are refused, and the handler logs each refusal with the peer's address, at a
// bounded rate when they flood in.
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "ipc/wire.hpp"
#include "ipc/zap_handler.hpp"
#include "ipc/zmq_sockets.hpp"
#include "tests/ipc/curve_test_keys.hpp"

using namespace std::chrono_literals;
namespace zmqs = ag::zmqs;

namespace {

using key_pair = ag::test::curve_key_pair;

struct log_lines {
  std::mutex m;
  std::vector<std::string> lines;
  void add(const std::string& l) {
    std::lock_guard<std::mutex> g{m};
    lines.push_back(l);
  }
  bool has(const std::string& a, const std::string& b) {
    std::lock_guard<std::mutex> g{m};
    for (const auto& l : lines)
      if (l.find(a) != std::string::npos && l.find(b) != std::string::npos)
        return true;
    return false;
  }
  bool eventually(const std::string& a, const std::string& b) {
    for (int i = 0; i < 300; ++i) {
      if (has(a, b))
        return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
};

void send_done(zmq::socket_t& push, uint64_t id) {
  ag::wire::done_msg m{1, id, 0};
  zmqs::send(push, {ag::wire::msg_type::done, id}, ag::wire::encode(m));
}

} // namespace

TEST_CASE("a CURVE server lets in the keys it allows, named, and logs every other peer with its "
          "address",
          "[ipc]") {
  zmq::context_t ctx{1};
  key_pair server, allowed, stranger;
  log_lines log;
  ag::zap_handler zap{ctx, {{allowed.pub, "n1"}}, [&](const std::string& l) { log.add(l); }};
  const zmqs::curve_keys server_keys{server.pub, server.sec, ""};
  auto pull = zmqs::puller(ctx, "tcp://127.0.0.1:0", &server_keys);
  zap.watch(pull, "reports");
  const std::string at = "tcp://127.0.0.1:" + std::to_string(zmqs::bound_port(pull));

  SECTION("an allowed key: its messages arrive with its name") {
    const zmqs::curve_keys keys{allowed.pub, allowed.sec, server.pub};
    auto push = zmqs::pusher(ctx, at, &keys);
    send_done(push, 1);
    auto r = zmqs::receive(pull, 5000ms);
    REQUIRE(r);
    CHECK(r->head.type == ag::wire::msg_type::done);
    CHECK(r->user() == "n1");
    CHECK(zap.refused() == 0);
  }
  SECTION("an unknown key: nothing arrives, and the refusal names its address") {
    const zmqs::curve_keys keys{stranger.pub, stranger.sec, server.pub};
    auto push = zmqs::pusher(ctx, at, &keys);
    send_done(push, 1);
    CHECK_FALSE(zmqs::receive(pull, 500ms));
    CHECK(log.eventually("127.0.0.1", "is not allowed"));
    CHECK(zap.refused() > 0);
  }
  SECTION("a plaintext peer: nothing arrives, and the refusal is logged") {
    // Its handshake fails at once, often before the accept event is read: its address is then
    // gone (docs/PROTOCOL.md, section 10).
    auto push = zmqs::pusher(ctx, at);
    send_done(push, 1);
    CHECK_FALSE(zmqs::receive(pull, 500ms));
    CHECK(log.eventually("refused a peer from ", "broke the protocol (plaintext"));
    CHECK_FALSE(log.has(at + " ", "")); // never the listening endpoint for the peer's
  }
  SECTION("an allowed key that expects another server gets nothing through") {
    key_pair other;
    const zmqs::curve_keys keys{allowed.pub, allowed.sec, other.pub};
    auto push = zmqs::pusher(ctx, at, &keys);
    send_done(push, 1);
    CHECK_FALSE(zmqs::receive(pull, 500ms));
    CHECK(log.eventually("refused a peer from ", "wrong server key"));
    CHECK_FALSE(log.has(at + " ", ""));
  }
}

TEST_CASE("a flood of refused peers is logged at a bounded rate, the rest counted in one line",
          "[ipc]") {
  zmq::context_t ctx{1};
  key_pair server;
  log_lines log;
  ag::zap_handler zap{ctx, {}, [&](const std::string& l) { log.add(l); }};
  const zmqs::curve_keys server_keys{server.pub, server.sec, ""};
  auto pull = zmqs::puller(ctx, "tcp://127.0.0.1:0", &server_keys);
  zap.watch(pull, "reports");
  const std::string at = "tcp://127.0.0.1:" + std::to_string(zmqs::bound_port(pull));
  std::vector<zmq::socket_t> strangers;
  for (int i = 0; i < 40; ++i) {
    key_pair k;
    const zmqs::curve_keys keys{k.pub, k.sec, server.pub};
    strangers.push_back(zmqs::pusher(ctx, at, &keys));
  }
  for (int i = 0; i < 300 && zap.refused() < 40; ++i)
    std::this_thread::sleep_for(10ms);
  REQUIRE(zap.refused() >= 40);
  CHECK(log.eventually("... and ", "more refused peers")); // once the second is over
  std::lock_guard<std::mutex> g{log.m};
  CHECK(log.lines.size() <= 10 * 3 + 3); // a few seconds at most 10 lines each, and summaries
}
