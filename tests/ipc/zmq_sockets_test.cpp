// Tests of ipc/zmq_sockets over real ipc:// sockets in a runtime directory: both socket pairs carry
// a header and a body, a quiet socket times out with an empty optional, and a malformed message is
// an ag::error that leaves the socket ready for the next good one.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include <sys/stat.h>

#include <zmq.hpp>

#include "actorgraph/error.hpp"
#include "ipc/runtime_dir.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace wire = ag::wire;
namespace zmqs = ag::zmqs;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

wire::bytes body_of(wire::done_msg msg) { return wire::encode(msg); }

wire::done_msg done_from(const zmq::message_t& body) {
  wire::done_msg msg;
  wire::decode(body.data(), body.size(), msg);
  return msg;
}

// Sends raw frames, each but the last with sndmore, as a peer that ignores the wire format would.
void send_frames(zmq::socket_t& sock, std::initializer_list<std::string> frames) {
  std::size_t i = 0;
  for (const auto& f : frames) {
    const bool last = ++i == frames.size();
    sock.send(zmq::buffer(f), last ? zmq::send_flags::none : zmq::send_flags::sndmore);
  }
}

std::string as_string(const wire::bytes& b) { return std::string(b.begin(), b.end()); }

// A puller bound in a fresh runtime directory, a pusher and a plain PUSH socket connected to it.
struct pull_fixture {
  ag::runtime_dir dir = ag::runtime_dir::create();
  zmq::context_t ctx;
  zmq::socket_t pull = zmqs::puller(ctx, dir.endpoint("pull"));
  zmq::socket_t push = zmqs::pusher(ctx, dir.endpoint("pull"));
  zmq::socket_t raw = raw_pusher();

  zmq::socket_t raw_pusher() {
    zmq::socket_t s{ctx, zmq::socket_type::push};
    s.set(zmq::sockopt::linger, 0);
    s.connect(dir.endpoint("pull"));
    return s;
  }

  // The next message must be the done message `id` with `ops_done`.
  void expect_good(uint64_t id) {
    zmqs::send(push, wire::header{wire::msg_type::done, id}, body_of({1, id * 10, 0}));
    const auto r = zmqs::receive(pull, 5s);
    REQUIRE(r);
    CHECK(r->head.type == wire::msg_type::done);
    CHECK(r->head.id == id);
    CHECK(done_from(r->body).ops_done == id * 10);
  }
};

} // namespace

TEST_CASE("a pusher delivers a header and a body to the puller", "[ipc]") {
  pull_fixture f;
  zmqs::send(f.push, wire::header{wire::msg_type::done, 17}, body_of({3, 25, 4096}));
  const auto r = zmqs::receive(f.pull, 5s);
  REQUIRE(r);
  CHECK(r->head.type == wire::msg_type::done);
  CHECK(r->head.id == 17);
  const auto done = done_from(r->body);
  CHECK(done.lane == 3);
  CHECK(done.ops_done == 25);
  CHECK(done.device_bytes == 4096);
}

TEST_CASE("messages from one pusher arrive in the order they were sent", "[ipc]") {
  pull_fixture f;
  for (uint64_t id = 1; id <= 50; ++id)
    zmqs::send(f.push, wire::header{wire::msg_type::done, id}, body_of({0, id, 0}));
  for (uint64_t id = 1; id <= 50; ++id) {
    const auto r = zmqs::receive(f.pull, 5s);
    REQUIRE(r);
    CHECK(r->head.id == id);
    CHECK(done_from(r->body).ops_done == id);
  }
  CHECK_FALSE(zmqs::receive(f.pull, 20ms));
}

TEST_CASE("an empty body is delivered as an empty frame", "[ipc]") {
  pull_fixture f;
  zmqs::send(f.push, wire::header{wire::msg_type::destroy, 1}, {});
  const auto r = zmqs::receive(f.pull, 5s);
  REQUIRE(r);
  CHECK(r->head.type == wire::msg_type::destroy);
  CHECK(r->body.size() == 0);
}

TEST_CASE("a publisher delivers a header and a body to a subscriber once it is connected",
          "[ipc]") {
  auto dir = ag::runtime_dir::create();
  zmq::context_t ctx;
  auto pub = zmqs::publisher(ctx, dir.endpoint("pub"));
  auto sub = zmqs::subscriber(ctx, dir.endpoint("pub"));

  // Subscriptions travel to the publisher asynchronously: until one arrives, PUB drops messages.
  uint64_t id = 0;
  bool got_hello = false;
  const auto deadline = clock_type::now() + 5s;
  while (!got_hello && clock_type::now() < deadline) {
    zmqs::send(pub, wire::header{wire::msg_type::hello, ++id}, {});
    if (const auto r = zmqs::receive(sub, 50ms)) {
      CHECK(r->head.type == wire::msg_type::hello);
      CHECK(r->head.id <= id);
      got_hello = true;
    }
  }
  REQUIRE(got_hello);

  wire::execute_msg msg;
  ag::batch b;
  b.lane = 2;
  b.ops_before = 5;
  b.ops.resize(3);
  b.no_hold = {8, 9};
  msg.batches = {b};
  zmqs::send(pub, wire::header{wire::msg_type::execute, ++id}, wire::encode(msg));
  // Hellos sent before the first one arrived may still be on the way.
  std::optional<zmqs::received> r;
  for (int i = 0; i < 1000; ++i) {
    r = zmqs::receive(sub, 5s);
    if (!r || r->head.type != wire::msg_type::hello)
      break;
  }
  REQUIRE(r);
  CHECK(r->head.type == wire::msg_type::execute);
  CHECK(r->head.id == id);
  wire::execute_msg back;
  wire::decode(r->body.data(), r->body.size(), back);
  REQUIRE(back.batches.size() == 1);
  CHECK(back.batches[0].lane == 2);
  CHECK(back.batches[0].ops_before == 5);
  CHECK(back.batches[0].ops.size() == 3);
  CHECK(back.batches[0].no_hold == std::vector<ag::operand_id>{8, 9});
}

TEST_CASE("receive returns empty after its timeout when nothing was sent", "[ipc]") {
  pull_fixture f;
  const auto start = clock_type::now();
  CHECK_FALSE(zmqs::receive(f.pull, 200ms));
  const auto took = clock_type::now() - start;
  CHECK(took >= 100ms);
  CHECK(took < 5s);
  // A zero timeout only looks.
  CHECK_FALSE(zmqs::receive(f.pull, 0ms));
}

TEST_CASE("a message of one frame is an error and the socket stays usable", "[ipc]") {
  pull_fixture f;
  send_frames(f.raw, {std::string(wire::header_size, 'h')});
  CHECK_THROWS_WITH(zmqs::receive(f.pull, 5s), Catch::Contains("one frame (16 bytes)"));
  f.expect_good(1);
}

TEST_CASE("a valid header sent alone is an error and the socket stays usable", "[ipc]") {
  pull_fixture f;
  send_frames(f.raw, {as_string(wire::encode_header({wire::msg_type::done, 3}))});
  CHECK_THROWS_AS(zmqs::receive(f.pull, 5s), ag::error);
  f.expect_good(4);
}

TEST_CASE("a message of three frames is an error and every frame of it is consumed", "[ipc]") {
  pull_fixture f;
  const auto head = as_string(wire::encode_header({wire::msg_type::done, 8}));
  const auto body = as_string(body_of({1, 2, 3}));
  send_frames(f.raw, {head, body, "extra"});
  CHECK_THROWS_WITH(zmqs::receive(f.pull, 5s),
                    Catch::Contains("done") && Catch::Contains("more than two frames"));
  f.expect_good(9);
}

TEST_CASE("a message of many frames is an error and every frame of it is consumed", "[ipc]") {
  pull_fixture f;
  const auto head = as_string(wire::encode_header({wire::msg_type::ready, 8}));
  send_frames(f.raw, {head, "1", "2", "3", "4", "5", "6"});
  CHECK_THROWS_AS(zmqs::receive(f.pull, 5s), ag::error);
  f.expect_good(10);
}

TEST_CASE("a message with a bad header is an error and the socket stays usable", "[ipc]") {
  pull_fixture f;
  const auto body = as_string(body_of({1, 2, 3}));
  SECTION("a header frame of the wrong size") {
    send_frames(f.raw, {std::string(15, '\0'), body});
    CHECK_THROWS_WITH(zmqs::receive(f.pull, 5s), Catch::Contains("15 bytes"));
  }
  SECTION("a header of another version") {
    auto head = wire::encode_header({wire::msg_type::done, 1});
    head[2] = wire::version + 1;
    send_frames(f.raw, {as_string(head), body});
    CHECK_THROWS_WITH(zmqs::receive(f.pull, 5s),
                      Catch::Contains("version " + std::to_string(wire::version + 1)));
  }
  SECTION("a bad header followed by two more frames") {
    auto head = wire::encode_header({wire::msg_type::done, 1});
    head[0] = 'x';
    send_frames(f.raw, {as_string(head), body, body});
    CHECK_THROWS_WITH(zmqs::receive(f.pull, 5s), Catch::Contains("magic"));
  }
  f.expect_good(2);
  CHECK_FALSE(zmqs::receive(f.pull, 20ms));
}

TEST_CASE("receiving sockets limit frames to the wire maximum and keep every message", "[ipc]") {
  auto dir = ag::runtime_dir::create();
  zmq::context_t ctx;
  auto pull = zmqs::puller(ctx, dir.endpoint("pull"));
  auto sub = zmqs::subscriber(ctx, dir.endpoint("pub"));
  for (auto* s : {&pull, &sub}) {
    CHECK(s->get(zmq::sockopt::maxmsgsize) == wire::max_frame_bytes);
    CHECK(s->get(zmq::sockopt::rcvhwm) == 0);
    CHECK(s->get(zmq::sockopt::linger) == 0);
  }
}

TEST_CASE("sending sockets never drop a message for a slow peer", "[ipc]") {
  auto dir = ag::runtime_dir::create();
  zmq::context_t ctx;
  auto pub = zmqs::publisher(ctx, dir.endpoint("pub"));
  auto push = zmqs::pusher(ctx, dir.endpoint("pull"));
  CHECK(pub.get(zmq::sockopt::sndhwm) == 0);
  CHECK(push.get(zmq::sockopt::sndhwm) == 0);
  CHECK(pub.get(zmq::sockopt::linger) == 0);
  CHECK(push.get(zmq::sockopt::linger) == 1000);
}

TEST_CASE("the socket files of a runtime directory go with it", "[ipc]") {
  std::string path;
  {
    auto dir = ag::runtime_dir::create();
    path = dir.path();
    zmq::context_t ctx;
    auto pub = zmqs::publisher(ctx, dir.endpoint("pub"));
    auto pull = zmqs::puller(ctx, dir.endpoint("pull"));
    struct stat st {};
    CHECK(::stat((path + "/pub").c_str(), &st) == 0);
    CHECK(::stat((path + "/pull").c_str(), &st) == 0);
  }
  struct stat st {};
  CHECK(::stat(path.c_str(), &st) != 0);
}
