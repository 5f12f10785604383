#include "apps/ag-bench/zmq_floor.hpp"
#include "apps/ag-bench/stats.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <optional>
#include <vector>

#include <unistd.h>

#include <zmq.hpp>

#include "actorgraph/error.hpp"
#include "ipc/runtime_dir.hpp"
#include "ipc/sub_process.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag::bench {

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// The first byte of every message's first frame. Controller -> peer over PUB/SUB, peer ->
// controller over PUSH/PULL.
enum class kind : uint8_t {
  hello = 1,       // start-up probe; answered by hello_ack
  round_trip = 2,  // one 64-byte frame, echoed unchanged
  streamed = 3,    // 16-byte header frame + 16-byte body frame
  exit = 4,        // the peer exits with code 0
  hello_ack = 17,
  stream_done = 19, // after the last streamed message: how many the peer received
};

// Layout of a 16-byte header frame (and of the first 16 bytes of a round-trip frame): byte 0 the
// kind, bytes 4..8 a uint32 (streamed: how many messages the run has), bytes 8..16 a uint64
// (sequence number, streamed index, or stream_done's count), in host byte order: both ends are
// this same program on one machine.
constexpr std::size_t header_bytes = 16;
constexpr std::size_t body_bytes = 16;
constexpr std::size_t round_trip_bytes = 64;

constexpr int warm_up_round_trips = 100;
constexpr auto connect_timeout = 10s;
constexpr auto reply_timeout = 5s;  // one round trip
constexpr auto stream_timeout = 20s; // the peer's report after the last streamed message
constexpr auto exit_timeout = 5s;
constexpr auto peer_idle_limit = 30s;

using header = std::array<uint8_t, header_bytes>;

header make_header(kind k, uint32_t a, uint64_t n) {
  header h{};
  h[0] = static_cast<uint8_t>(k);
  std::memcpy(h.data() + 4, &a, sizeof a);
  std::memcpy(h.data() + 8, &n, sizeof n);
  return h;
}

kind kind_of(const zmq::message_t& m) {
  return m.size() > 0 ? static_cast<kind>(*static_cast<const uint8_t*>(m.data())) : kind{0};
}

uint32_t u32_at4(const zmq::message_t& m) {
  uint32_t v = 0;
  if (m.size() >= 8)
    std::memcpy(&v, static_cast<const uint8_t*>(m.data()) + 4, sizeof v);
  return v;
}

uint64_t u64_at8(const zmq::message_t& m) {
  uint64_t v = 0;
  if (m.size() >= 16)
    std::memcpy(&v, static_cast<const uint8_t*>(m.data()) + 8, sizeof v);
  return v;
}

// Drops the frames of a message after `last`, the one already received.
void drain_rest(zmq::socket_t& s, const zmq::message_t& last) {
  bool more = last.more();
  while (more) {
    zmq::message_t rest;
    if (!s.recv(rest, zmq::recv_flags::dontwait))
      break;
    more = rest.more();
  }
}

std::string describe(const sub_process& peer) {
  return "the zmq peer (pid " + std::to_string(peer.pid()) + ")";
}

// One message's first frame from `pull` (later frames dropped), or empty once `deadline` has
// passed. The peer's liveness is checked only when a poll slice times out, so that a waiting
// message costs one poll and one receive, as in the runtime.
std::optional<zmq::message_t> receive_until(zmq::socket_t& pull, sub_process& peer,
                                            steady::time_point deadline, const char* doing) {
  zmq::pollitem_t item{pull.handle(), 0, ZMQ_POLLIN, 0};
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - steady::now());
    if (zmq::poll(&item, 1, std::clamp(left, 0ms, 100ms)) > 0) {
      zmq::message_t m;
      if (pull.recv(m, zmq::recv_flags::dontwait)) {
        drain_rest(pull, m);
        return m;
      }
      continue;
    }
    if (const auto& st = peer.try_wait())
      throw error("zmq floor: " + describe(peer) + " " + st->str() + " while " + doing);
    if (steady::now() >= deadline)
      return std::nullopt;
  }
}

zmq_floor measure(const std::string& peer_program, bool quick) {
  zmq_floor r;
  r.round_trips = quick ? 200 : 2000;
  r.streamed = quick ? 20000 : 200000;

  // Declared so that they go in reverse: the peer (killed if it still runs), the sockets, the
  // context, then the directory with whatever socket files are left in it.
  auto dir = runtime_dir::create();
  zmq::context_t ctx{1};
  // The runtime's own sockets (ipc/zmq_sockets.hpp), so that the floor has its settings.
  auto pub = zmqs::publisher(ctx, dir.endpoint("pub"));
  auto pull = zmqs::puller(ctx, dir.endpoint("pull"));
  sub_process peer;
  try {
    peer = sub_process::spawn(peer_program, {"--zmq-peer=" + dir.path()});
  } catch (const error& e) {
    throw error(std::string{"zmq floor: "} + e.what());
  }

  // PUB drops what it sends before the peer's subscription has arrived: probe until answered.
  {
    const auto deadline = steady::now() + connect_timeout;
    uint64_t seq = 0;
    for (bool connected = false; !connected;) {
      if (steady::now() >= deadline)
        throw error("zmq floor: " + describe(peer) + " started from " + peer_program
                    + " did not connect within 10 s");
      pub.send(zmq::buffer(make_header(kind::hello, 0, ++seq)), zmq::send_flags::none);
      if (auto m = receive_until(pull, peer, std::min(deadline, steady::now() + 1ms),
                                 "connecting"))
        connected = kind_of(*m) == kind::hello_ack;
    }
  }

  std::array<uint8_t, round_trip_bytes> trip{};
  trip[0] = static_cast<uint8_t>(kind::round_trip);
  auto one_round_trip = [&](uint64_t seq) {
    std::memcpy(trip.data() + 8, &seq, sizeof seq);
    const auto t0 = steady::now();
    pub.send(zmq::buffer(trip), zmq::send_flags::none);
    const auto deadline = t0 + reply_timeout;
    for (;;) {
      auto m = receive_until(pull, peer, deadline, "echoing round trips");
      if (!m)
        throw error("zmq floor: " + describe(peer) + " did not echo round trip "
                    + std::to_string(seq) + " within 5 s");
      if (kind_of(*m) == kind::hello_ack)
        continue; // late answers to the start-up probes
      if (kind_of(*m) != kind::round_trip || m->size() != round_trip_bytes || u64_at8(*m) != seq)
        throw error("zmq floor: " + describe(peer) + " answered round trip " + std::to_string(seq)
                    + " with a " + std::to_string(m->size()) + "-byte message of kind "
                    + std::to_string(static_cast<int>(kind_of(*m))) + ", sequence "
                    + std::to_string(u64_at8(*m)));
      return std::chrono::duration<double, std::micro>(steady::now() - t0).count();
    }
  };
  uint64_t seq = 0;
  for (int i = 0; i < warm_up_round_trips; ++i)
    one_round_trip(++seq);
  std::vector<double> trips;
  trips.reserve(static_cast<std::size_t>(r.round_trips));
  for (int i = 0; i < r.round_trips; ++i)
    trips.push_back(one_round_trip(++seq));
  r.round_trip_us = median(std::move(trips));

  {
    const auto total = static_cast<uint32_t>(r.streamed);
    auto head = make_header(kind::streamed, total, 0);
    std::array<uint8_t, body_bytes> body{};
    const auto t0 = steady::now();
    for (uint64_t i = 0; i < total; ++i) {
      std::memcpy(head.data() + 8, &i, sizeof i);
      pub.send(zmq::buffer(head), zmq::send_flags::sndmore);
      pub.send(zmq::buffer(body), zmq::send_flags::none);
    }
    const auto deadline = steady::now() + stream_timeout;
    for (;;) {
      auto m = receive_until(pull, peer, deadline, "receiving streamed messages");
      if (!m)
        throw error("zmq floor: " + describe(peer) + " did not report the last of "
                    + std::to_string(total) + " streamed messages within 20 s");
      if (kind_of(*m) != kind::stream_done)
        continue;
      const auto t1 = steady::now();
      if (u64_at8(*m) != total)
        throw error("zmq floor: " + describe(peer) + " received " + std::to_string(u64_at8(*m))
                    + " of " + std::to_string(total) + " streamed messages");
      r.streamed_us_per_msg = std::chrono::duration<double, std::micro>(t1 - t0).count() / total;
      break;
    }
  }

  // The sockets stay open until the peer has gone: a PUB with linger 0 would drop the exit message.
  pub.send(zmq::buffer(make_header(kind::exit, 0, 0)), zmq::send_flags::none);
  const auto& st = peer.wait_for(exit_timeout);
  if (!st) {
    peer.kill_and_reap();
    throw error("zmq floor: " + describe(peer) + " did not exit within 5 s of the exit message; "
                "killed");
  }
  if (st->code != 0 || st->signal != 0)
    throw error("zmq floor: " + describe(peer) + " " + st->str() + " at the exit message");
  return r;
}

} // namespace

zmq_floor measure_zmq_floor(const std::string& peer_program, bool quick) {
  try {
    return measure(peer_program, quick);
  } catch (const zmq::error_t& e) {
    throw error(std::string{"zmq floor: "} + e.what());
  }
}

int zmq_peer_main(const std::string& dir) {
  const auto fail = [](const std::string& what, int code) {
    std::cerr << "ag-bench --zmq-peer: " << what << '\n';
    return code;
  };
  try {
    const pid_t parent = ::getppid();
    zmq::context_t ctx{1};
    auto sub = zmqs::subscriber(ctx, "ipc://" + dir + "/pub");
    // The runtime's child lingers so that its last acknowledgements still leave; bounded.
    auto push = zmqs::pusher(ctx, "ipc://" + dir + "/pull");

    zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
    bool active = true; // a message arrived since the last poll timeout
    auto idle_since = steady::now();
    uint64_t got = 0; // streamed messages of the current run
    for (;;) {
      zmq::message_t first;
      // Read everything queued before polling again: the cheapest way through a streamed run.
      if (!sub.recv(first, zmq::recv_flags::dontwait)) {
        if (zmq::poll(&item, 1, 100ms) == 0) {
          if (::getppid() != parent)
            return fail("the controller is gone; exiting", 3);
          if (active) {
            active = false;
            idle_since = steady::now();
          } else if (steady::now() - idle_since >= peer_idle_limit) {
            return fail("no message for 30 s; exiting", 3);
          }
        }
        continue;
      }
      active = true;
      switch (kind_of(first)) {
        case kind::hello:
          drain_rest(sub, first);
          push.send(zmq::buffer(make_header(kind::hello_ack, 0, u64_at8(first))),
                    zmq::send_flags::none);
          break;
        case kind::round_trip:
          drain_rest(sub, first);
          push.send(first, zmq::send_flags::none);
          break;
        case kind::streamed: {
          zmq::message_t body;
          if (!first.more() || !sub.recv(body, zmq::recv_flags::dontwait))
            return fail("a streamed message without its body frame", 2);
          drain_rest(sub, body);
          ++got;
          if (u64_at8(first) + 1 == u32_at4(first)) {
            push.send(zmq::buffer(make_header(kind::stream_done, 0, got)), zmq::send_flags::none);
            got = 0;
          }
          break;
        }
        case kind::exit:
          return 0;
        default:
          return fail("a message of unknown kind " + std::to_string(static_cast<int>(kind_of(first)))
                        + " (" + std::to_string(first.size()) + " bytes)",
                      2);
      }
    }
  } catch (const zmq::error_t& e) {
    return fail(std::string{"zmq: "} + e.what(), 2);
  }
}

} // namespace ag::bench
