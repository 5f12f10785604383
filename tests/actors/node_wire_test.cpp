// The controller's puller on the TCP side of a runtime with nodes, with real CURVE sockets and a
// real ZAP handler: a message must come from the node of the lane it names, a replayed or
// out-of-order id is refused, and Data-out bytes land in the store, bounds-checked, before the
// Done behind them, also when they come over several return streams behind a Data-done. A child's
// Pulse (its main thread's sign of a busy runner) shows on the board, from the lane's node alone.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <zmq.hpp>

#include "actors/process_setup.hpp"
#include "actors/protocol.hpp"
#include "actors/puller.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/wire.hpp"
#include "ipc/zap_handler.hpp"
#include "ipc/zmq_sockets.hpp"
#include "tests/ipc/curve_test_keys.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
namespace zmqs = ag::zmqs;
namespace wire = ag::wire;

namespace {

using key_pair = ag::test::curve_key_pair;

// A puller whose TCP side lets in n1 (lane 1) and n2 (lane 2), reporting to a scoped actor.
struct fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor executor{sys};
  std::shared_ptr<zmq::context_t> ctx = std::make_shared<zmq::context_t>(1);
  key_pair server, n1, n2;
  std::vector<std::byte> store = std::vector<std::byte>(1 << 16);
  ag::local_board board{3}; // where the puller shows Dones and Pulses
  std::string at;
  std::vector<std::string> returns_at; // the return streams' endpoints
  caf::actor puller;

  explicit fixture(std::size_t returns = 0) {
    auto net = std::make_shared<ag::network_setup>();
    net->zap = std::make_shared<ag::zap_handler>(
      *ctx, std::map<std::string, std::string>{{n1.pub, "n1"}, {n2.pub, "n2"}},
      [](const std::string&) {});
    const zmqs::curve_keys keys{server.pub, server.sec, ""};
    net->pull = std::make_shared<zmq::socket_t>(zmqs::puller(*ctx, "tcp://127.0.0.1:0", &keys));
    at = "tcp://127.0.0.1:" + std::to_string(zmqs::bound_port(*net->pull));
    for (std::size_t k = 0; k < returns; ++k) {
      net->returns.push_back(
        std::make_shared<zmq::socket_t>(zmqs::puller(*ctx, "tcp://127.0.0.1:0", &keys)));
      returns_at.push_back("tcp://127.0.0.1:"
                           + std::to_string(zmqs::bound_port(*net->returns.back())));
    }
    net->lane_node = {"", "n1", "n2"};
    puller = ag::spawn_puller(sys, ctx, "inproc://ag-test-local-pull",
                              caf::actor_cast<caf::actor>(executor), net, store.data(),
                              store.size(), &board.board());
  }
  ~fixture() { caf::anon_send_exit(puller, caf::exit_reason::user_shutdown); }

  zmq::socket_t client(const key_pair& k, const std::string& where = {}) {
    const zmqs::curve_keys keys{k.pub, k.sec, server.pub};
    return zmqs::pusher(*ctx, where.empty() ? at : where, &keys);
  }
  std::vector<zmq::socket_t> return_clients(const key_pair& k) {
    std::vector<zmq::socket_t> socks;
    for (const auto& r : returns_at)
      socks.push_back(client(k, r));
    return socks;
  }

  // The failure the puller reports, or empty once 5 s pass without one.
  std::string next_failure() {
    std::string what;
    executor->receive([&](ag::failed_atom, uint32_t, uint64_t, std::string& w) { what = w; },
                      [&](ag::done_atom, uint32_t, uint64_t, uint64_t, uint64_t) { what = "done"; },
                      [&](ag::ready_atom, uint32_t) { what = "ready"; },
                      caf::after(5s) >> [] {});
    return what;
  }
};

void send_done(zmq::socket_t& s, uint32_t lane, uint64_t id) {
  wire::done_msg m{lane, id, 0};
  zmqs::send(s, {wire::msg_type::done, id}, wire::encode(m));
}

} // namespace

TEST_CASE("a node's message for a lane of another node is refused as forged", "[nodes]") {
  fixture f;
  auto from_n2 = f.client(f.n2);
  send_done(from_n2, 1, 1); // lane 1 is n1's
  CHECK_THAT(f.next_failure(), Contains("from node \"n2\", not n1 (forged)"));
}

TEST_CASE("a node's replayed or skipped message id is refused", "[nodes]") {
  fixture f;
  auto from_n1 = f.client(f.n1);
  send_done(from_n1, 1, 1);
  CHECK(f.next_failure() == "done");
  send_done(from_n1, 1, 1); // the same frame again
  CHECK_THAT(f.next_failure(), Contains("a gap or a replay"));
}

TEST_CASE("Data-out bytes land in the store before the Done behind them, and a range beyond the store "
          "is refused",
          "[nodes]") {
  fixture f;
  auto from_n2 = f.client(f.n2);
  std::vector<char> bytes(5000);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 7);
  uint64_t id = 1;
  zmqs::send_data(from_n2, wire::msg_type::data_out, 2, id, 1024, bytes.data(), bytes.size());
  send_done(from_n2, 2, id++);
  REQUIRE(f.next_failure() == "done");
  CHECK(std::memcmp(f.store.data() + 1024, bytes.data(), bytes.size()) == 0);
  zmqs::send_data(from_n2, wire::msg_type::data_out, 2, id, f.store.size() - 10, bytes.data(),
                  100);
  CHECK_THAT(f.next_failure(), Contains("beyond the") && Contains("store"));
}

TEST_CASE("Data-out pieces over several return streams land in the store before the Done behind "
          "their Data-done, however late they come",
          "[nodes]") {
  fixture f{3};
  auto reports = f.client(f.n1);
  auto streams = f.return_clients(f.n1);
  std::vector<zmq::socket_t*> to;
  for (auto& s : streams)
    to.push_back(&s);
  std::vector<char> bytes(20000);
  for (std::size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 13 + 1);
  // Five pieces of lane 1 (ids 1..5 over three streams), announced before they are sent.
  zmqs::send(reports, {wire::msg_type::data_done, 1, 1}, wire::encode_data_done(5));
  send_done(reports, 1, 2);
  std::this_thread::sleep_for(50ms);
  uint64_t piece = 1;
  for (int i = 0; i < 5; ++i)
    zmqs::send_data(to, wire::msg_type::data_out, 1, piece, 4096 + 4000 * i,
                    bytes.data() + 4000 * i, 4000);
  REQUIRE(f.next_failure() == "done");
  CHECK(std::memcmp(f.store.data() + 4096, bytes.data(), bytes.size()) == 0);
}

TEST_CASE("a Data-out piece on a return stream from another node, or out of its stream's order, "
          "is refused",
          "[nodes]") {
  fixture f{2};
  char b[16] = {};
  SECTION("another node's lane") {
    auto streams = f.return_clients(f.n2);
    std::vector<zmq::socket_t*> to{&streams[0], &streams[1]};
    uint64_t piece = 1;
    zmqs::send_data(to, wire::msg_type::data_out, 1, piece, 0, b, sizeof b);
    CHECK_THAT(f.next_failure(), Contains("from node \"n2\", not n1 (forged)"));
  }
  SECTION("a gap") {
    auto streams = f.return_clients(f.n1);
    uint64_t piece = 3; // stream 0 carries 1, 3, 5, ...: 3 first is a gap
    zmqs::send_data(std::vector<zmq::socket_t*>{&streams[0]}, wire::msg_type::data_out, 1, piece,
                    0, b, sizeof b);
    CHECK_THAT(f.next_failure(), Contains("data_out gap on return stream 0: expected piece 1"));
  }
  SECTION("a Data-done to a controller without return streams") {
    fixture plain;
    auto reports = plain.client(plain.n1);
    zmqs::send(reports, {wire::msg_type::data_done, 1, 1}, wire::encode_data_done(1));
    CHECK_THAT(plain.next_failure(), Contains("data_done from a lane without return streams"));
  }
}

TEST_CASE("a lane waiting behind its Data-done for pieces does not hold another lane's reports",
          "[nodes]") {
  fixture f{2};
  auto from_n1 = f.client(f.n1);
  auto from_n2 = f.client(f.n2);
  auto n1_streams = f.return_clients(f.n1);
  // Lane 1 names two pieces it has not sent yet; lane 2's Done comes behind.
  zmqs::send(from_n1, {wire::msg_type::data_done, 1, 1}, wire::encode_data_done(2));
  send_done(from_n1, 1, 2);
  std::this_thread::sleep_for(50ms);
  send_done(from_n2, 2, 1);
  uint32_t first_lane = 0;
  f.executor->receive([&](ag::done_atom, uint32_t l, uint64_t, uint64_t, uint64_t) { first_lane = l; },
                      caf::after(5s) >> [] {});
  CHECK(first_lane == 2);
  char b[4000];
  for (std::size_t i = 0; i < sizeof b; ++i)
    b[i] = static_cast<char>(i);
  std::vector<zmq::socket_t*> to{&n1_streams[0], &n1_streams[1]};
  uint64_t piece = 1;
  zmqs::send_data(to, wire::msg_type::data_out, 1, piece, 8192, b, 2000);
  zmqs::send_data(to, wire::msg_type::data_out, 1, piece, 8192 + 2000, b + 2000, 2000);
  uint32_t then = 0;
  f.executor->receive([&](ag::done_atom, uint32_t l, uint64_t, uint64_t, uint64_t) { then = l; },
                      caf::after(5s) >> [] {});
  CHECK(then == 1);
  CHECK(std::memcmp(f.store.data() + 8192, b, sizeof b) == 0);
}

namespace {

// Whether, within 5 s, the board shows lane 1 inside operator `running` with more beats than
// `beats`.
bool board_shows(ag::completion_board& b, uint64_t running, uint64_t beats) {
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < until) {
    if (b.running_at(1) == running && b.beats(1) > beats)
      return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

} // namespace

TEST_CASE("a child's Pulse shows its running operator and a beat on the board, beside its reports' "
          "order, and one from another node or malformed fails the lane",
          "[nodes]") {
  fixture f;
  auto& board = f.board.board();
  auto reports = f.client(f.n1);
  auto pulses = f.client(f.n1); // the main thread's own socket: ids of its own
  const uint64_t beats = board.beats(1);
  zmqs::send(pulses, {wire::msg_type::pulse, 1, 1}, wire::encode_pulse(7));
  CHECK(board_shows(board, 7, beats));
  send_done(reports, 1, 1); // the reports' ids go on from 1: pulses are not in their order
  CHECK(f.next_failure() == "done");
  zmqs::send(pulses, {wire::msg_type::pulse, 2, 1}, wire::encode_pulse(0)); // out of it again
  CHECK(board_shows(board, 0, beats + 1));
  send_done(reports, 1, 2);
  CHECK(f.next_failure() == "done");

  SECTION("from another node") {
    auto from_n2 = f.client(f.n2);
    zmqs::send(from_n2, {wire::msg_type::pulse, 1, 1}, wire::encode_pulse(9));
    CHECK_THAT(f.next_failure(), Contains("from node \"n2\", not n1 (forged)"));
    CHECK(board.running_at(1) == 0);
  }
  SECTION("malformed") {
    zmqs::send(pulses, {wire::msg_type::pulse, 3, 1}, wire::bytes(3));
    CHECK_THAT(f.next_failure(), Contains("malformed pulse message: a body of 3 bytes"));
    CHECK(board.lane_failed(1));
  }
}
