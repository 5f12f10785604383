#include "apps/ag-bench/zmq_floor.hpp"
#include "apps/ag-bench/stats.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <zmq.hpp>

#include "actorgraph/error.hpp"
#include "ipc/runtime_dir.hpp"
#include "ipc/sub_process.hpp"
#include "ipc/wire.hpp"
#include "ipc/zap_handler.hpp"
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
  streamed = 3,    // 16-byte header frame + a body frame of any size (streamed and bulk runs)
  exit = 4,        // the peer exits with code 0
  hello_ack = 17,
  stream_done = 19, // after the last message of a run: how many messages and body bytes arrived
};

// Layout of a 16-byte header frame (and of the first 16 bytes of a round-trip frame): byte 0 the
// kind, bytes 4..8 a uint32 (streamed: how many messages the run has; stream_done: how many
// arrived), bytes 8..16 a uint64 (sequence number, streamed index, or stream_done's body bytes), in
// host byte order: both ends are this same program on one machine.
constexpr std::size_t header_bytes = 16;
constexpr std::size_t body_bytes = 16;
constexpr std::size_t round_trip_bytes = 64;
constexpr std::size_t bulk_piece_bytes = wire::max_data_piece;

constexpr int warm_up_round_trips = 100;
constexpr uint32_t warm_up_bulk_pieces = 4; // first use of the buffers and TCP's windows
// ThreadSanitizer runs both sides tens of times slower: every deadline here stretches with it.
#if defined(__SANITIZE_THREAD__)
constexpr int sanitizer_slow = 10;
#else
constexpr int sanitizer_slow = 1;
#endif
constexpr auto connect_timeout = 10s * sanitizer_slow;
constexpr auto reply_timeout = 5s * sanitizer_slow; // one round trip
// The peer's report after the last streamed message, and after the last bulk piece (1 GiB at
// 20 MB/s).
constexpr auto stream_timeout = 20s * sanitizer_slow;
constexpr auto bulk_timeout = 60s * sanitizer_slow;
constexpr auto exit_timeout = 5s * sanitizer_slow;
constexpr auto peer_idle_limit = 30s * sanitizer_slow;

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

// -- where the peer connects -----------------------------------------------------------------------

// What --zmq-peer=SPEC says (zmq_floor.hpp).
struct peer_spec {
  zmq_path path = zmq_path::ipc;
  std::string dir;       // ipc: the runtime directory of the sockets
  uint16_t pub_port = 0; // tcp, tcp_curve
  uint16_t pull_port = 0;
  std::string keys_file; // tcp_curve: the peer's keys
};

std::string spec_text(const peer_spec& s) {
  if (s.path == zmq_path::ipc)
    return "ipc," + s.dir;
  std::string text = std::string{to_string(s.path)} + "," + std::to_string(s.pub_port) + ","
                     + std::to_string(s.pull_port);
  return s.path == zmq_path::tcp_curve ? text + "," + s.keys_file : text;
}

// The next ','-separated field of `text` from `at` (all the rest when `last`).
std::string field(const std::string& text, std::size_t& at, bool last) {
  if (at > text.size())
    return {};
  const auto comma = last ? std::string::npos : text.find(',', at);
  std::string f = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
  at = comma == std::string::npos ? text.size() + 1 : comma + 1;
  return f;
}

std::optional<uint16_t> port_of(const std::string& text) {
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const unsigned long p = std::stoul(text);
  if (p == 0 || p > 65535)
    return std::nullopt;
  return static_cast<uint16_t>(p);
}

// Throws ag::error naming what is wrong with `text`.
peer_spec parse_spec(const std::string& text) {
  std::size_t at = 0;
  peer_spec s;
  const std::string path = field(text, at, false);
  if (path == "ipc") {
    s.dir = field(text, at, true);
    if (s.dir.empty())
      throw error("--zmq-peer=" + text + ": ipc needs a directory (ipc,DIR)");
    return s;
  }
  if (path != "tcp" && path != "tcp_curve")
    throw error("--zmq-peer=" + text + ": expected ipc,DIR or tcp[_curve],PUBPORT,PULLPORT[,KEYS]");
  s.path = path == "tcp" ? zmq_path::tcp : zmq_path::tcp_curve;
  const auto pub = port_of(field(text, at, false));
  const auto pull = port_of(field(text, at, s.path == zmq_path::tcp));
  if (!pub || !pull)
    throw error("--zmq-peer=" + text + ": ports must be 1 to 65535");
  s.pub_port = *pub;
  s.pull_port = *pull;
  if (s.path == zmq_path::tcp_curve) {
    s.keys_file = field(text, at, true);
    if (s.keys_file.empty())
      throw error("--zmq-peer=" + text
                  + ": tcp_curve needs the keys file (tcp_curve,PUBPORT,PULLPORT,KEYS)");
  }
  return s;
}

std::string tcp_endpoint(uint16_t port) { return "tcp://127.0.0.1:" + std::to_string(port); }

// -- CURVE keys for one measurement ----------------------------------------------------------------

zmqs::curve_keys make_key_pair() {
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    throw error(std::string{"zmq_curve_keypair: "} + zmq_strerror(errno)
                + " (libzmq without CURVE?)");
  return {pub, sec, {}};
}

constexpr const char* key_labels[] = {"server-public", "peer-public", "peer-secret"};

// The peer's half: a file only this user can read (O_EXCL: never one that was there).
void write_peer_keys(const std::string& file, const std::string& server_public,
                     const zmqs::curve_keys& peer) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw error("cannot create " + file + ": " + std::strerror(errno));
  const std::string text = std::string{key_labels[0]} + " " + server_public + "\n" + key_labels[1]
                           + " " + peer.public_key + "\n" + key_labels[2] + " " + peer.secret_key
                           + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::close(fd);
  if (!written)
    throw error("cannot write " + file);
}

// The peer's keys as a CURVE client of the measuring side; throws ag::error naming the file.
zmqs::curve_keys read_peer_keys(const std::string& file) {
  std::ifstream in{file};
  std::string values[3];
  for (int i = 0; i < 3; ++i) {
    std::string label;
    if (!(in >> label >> values[i]) || label != key_labels[i] || values[i].size() != 40)
      throw error(file + ": expected a line \"" + key_labels[i] + " Z85\" (40 characters)");
  }
  return {values[1], values[2], values[0]};
}

// -- the measuring side ----------------------------------------------------------------------------

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
      throw error(describe(peer) + " " + st->str() + " while " + doing);
    if (steady::now() >= deadline)
      return std::nullopt;
  }
}

// PUB drops what it sends before the peer's subscription has arrived: probes until answered.
void await_peer(zmq::socket_t& pub, zmq::socket_t& pull, sub_process& peer,
                const std::string& peer_program) {
  const auto deadline = steady::now() + connect_timeout;
  uint64_t seq = 0;
  for (;;) {
    if (steady::now() >= deadline)
      throw error(describe(peer) + " started from " + peer_program
                  + " did not connect within 10 s");
    pub.send(zmq::buffer(make_header(kind::hello, 0, ++seq)), zmq::send_flags::none);
    if (auto m = receive_until(pull, peer, std::min(deadline, steady::now() + 1ms), "connecting"))
      if (kind_of(*m) == kind::hello_ack)
        return;
  }
}

// One 64-byte message there and back: microseconds.
double one_round_trip(zmq::socket_t& pub, zmq::socket_t& pull, sub_process& peer, uint64_t seq) {
  std::array<uint8_t, round_trip_bytes> trip{};
  trip[0] = static_cast<uint8_t>(kind::round_trip);
  std::memcpy(trip.data() + 8, &seq, sizeof seq);
  const auto t0 = steady::now();
  pub.send(zmq::buffer(trip), zmq::send_flags::none);
  const auto deadline = t0 + reply_timeout;
  for (;;) {
    auto m = receive_until(pull, peer, deadline, "echoing round trips");
    if (!m)
      throw error(describe(peer) + " did not echo round trip " + std::to_string(seq)
                  + " within 5 s");
    if (kind_of(*m) == kind::hello_ack)
      continue; // late answers to the start-up probes
    if (kind_of(*m) != kind::round_trip || m->size() != round_trip_bytes || u64_at8(*m) != seq)
      throw error(describe(peer) + " answered round trip " + std::to_string(seq) + " with a "
                  + std::to_string(m->size()) + "-byte message of kind "
                  + std::to_string(static_cast<int>(kind_of(*m))) + ", sequence "
                  + std::to_string(u64_at8(*m)));
    return std::chrono::duration<double, std::micro>(steady::now() - t0).count();
  }
}

// Sends `count` messages of a header and `body` PUB->SUB back to back (each body copied into its
// message, as the runtime's send_data copies store bytes), then waits up to `timeout` for the
// peer's report that every message and byte arrived: seconds from the first send to the report.
double one_way(zmq::socket_t& pub, zmq::socket_t& pull, sub_process& peer, uint32_t count,
               const std::vector<uint8_t>& body, std::chrono::seconds timeout, const char* what) {
  auto head = make_header(kind::streamed, count, 0);
  const auto t0 = steady::now();
  for (uint64_t i = 0; i < count; ++i) {
    std::memcpy(head.data() + 8, &i, sizeof i);
    pub.send(zmq::buffer(head), zmq::send_flags::sndmore);
    pub.send(zmq::buffer(body), zmq::send_flags::none);
  }
  const auto deadline = steady::now() + timeout;
  const uint64_t bytes = uint64_t{count} * body.size();
  for (;;) {
    auto m = receive_until(pull, peer, deadline, what);
    if (!m)
      throw error(describe(peer) + " did not report the last of " + std::to_string(count) + " "
                  + what + " within " + std::to_string(timeout.count()) + " s");
    if (kind_of(*m) != kind::stream_done)
      continue;
    const auto t1 = steady::now();
    if (u32_at4(*m) != count || u64_at8(*m) != bytes)
      throw error(describe(peer) + " received " + std::to_string(u32_at4(*m)) + " of "
                  + std::to_string(count) + " " + what + " (" + std::to_string(u64_at8(*m))
                  + " of " + std::to_string(bytes) + " bytes)");
    return std::chrono::duration<double>(t1 - t0).count();
  }
}

// The sockets stay open until the peer has gone: a PUB with linger 0 would drop the exit message.
void stop_peer(zmq::socket_t& pub, sub_process& peer) {
  pub.send(zmq::buffer(make_header(kind::exit, 0, 0)), zmq::send_flags::none);
  const auto& st = peer.wait_for(exit_timeout);
  if (!st) {
    peer.kill_and_reap();
    throw error(describe(peer) + " did not exit within 5 s of the exit message; killed");
  }
  if (st->code != 0 || st->signal != 0)
    throw error(describe(peer) + " " + st->str() + " at the exit message");
}

// The measurements, once the peer is connected.
void measure_connected(zmq_floor& r, zmq::socket_t& pub, zmq::socket_t& pull, sub_process& peer) {
  uint64_t seq = 0;
  for (int i = 0; i < warm_up_round_trips; ++i)
    one_round_trip(pub, pull, peer, ++seq);
  std::vector<double> trips;
  trips.reserve(static_cast<std::size_t>(r.round_trips));
  for (int i = 0; i < r.round_trips; ++i)
    trips.push_back(one_round_trip(pub, pull, peer, ++seq));
  r.round_trip_us = median(std::move(trips));

  const auto streamed = static_cast<uint32_t>(r.streamed);
  const std::vector<uint8_t> small(body_bytes);
  r.streamed_us_per_msg =
    one_way(pub, pull, peer, streamed, small, stream_timeout, "streamed messages") * 1e6 / streamed;

  const std::vector<uint8_t> piece(bulk_piece_bytes, uint8_t{0x5a});
  const auto pieces = static_cast<uint32_t>(r.bulk_bytes / bulk_piece_bytes);
  one_way(pub, pull, peer, warm_up_bulk_pieces, piece, bulk_timeout, "bulk pieces (warm-up)");
  r.bulk_gbps = double(r.bulk_bytes) / one_way(pub, pull, peer, pieces, piece, bulk_timeout,
                                               "bulk pieces") * 1e-9;
}

zmq_floor measure(const std::string& peer_program, zmq_path path, bool quick) {
  zmq_floor r;
  r.path = path;
  r.round_trips = quick ? 200 : 2000;
  r.streamed = quick ? 20000 : 200000;
  r.bulk_bytes = quick ? std::size_t{64} << 20 : std::size_t{1} << 30;
  const bool tcp = path != zmq_path::ipc;
  const bool curve = path == zmq_path::tcp_curve;

  // Declared so that they go in reverse: the peer (killed if it still runs), the sockets, the ZAP
  // handler, the context, then the directory with whatever files are left in it.
  auto dir = runtime_dir::create();
  zmq::context_t ctx{1};
  const auto server = curve ? make_key_pair() : zmqs::curve_keys{};
  const auto client = curve ? make_key_pair() : zmqs::curve_keys{};
  // Up before the sockets bind: libzmq lets every client in while no handler is bound.
  std::optional<zap_handler> zap;
  if (curve)
    zap.emplace(ctx, std::map<std::string, std::string>{{client.public_key, "zmq-peer"}},
                [](const std::string& line) {
                  std::fprintf(stderr, "ag-bench: zmq floor (tcp_curve): %s\n", line.c_str());
                });
  // The runtime's own sockets (ipc/zmq_sockets.hpp), so that the floor has its settings.
  const auto* keys = curve ? &server : nullptr;
  auto pub = zmqs::publisher(ctx, tcp ? "tcp://127.0.0.1:0" : dir.endpoint("pub"), keys);
  auto pull = zmqs::puller(ctx, tcp ? "tcp://127.0.0.1:0" : dir.endpoint("pull"), keys);

  peer_spec spec;
  spec.path = path;
  spec.dir = dir.path();
  if (tcp) {
    spec.pub_port = zmqs::bound_port(pub);
    spec.pull_port = zmqs::bound_port(pull);
  }
  if (curve) {
    spec.keys_file = dir.path() + "/peer.keys";
    write_peer_keys(spec.keys_file, server.public_key, client);
  }
  sub_process peer = sub_process::spawn(peer_program, {"--zmq-peer=" + spec_text(spec)});
  await_peer(pub, pull, peer, peer_program);
  measure_connected(r, pub, pull, peer);
  stop_peer(pub, peer);
  return r;
}

// -- the peer --------------------------------------------------------------------------------------

// The messages of a streamed or bulk run so far.
struct run_count {
  uint32_t messages = 0;
  uint64_t bytes = 0;
};

// Takes the body of streamed message `first`; after the last of its run, reports the count.
// False: no body frame.
bool take_streamed(zmq::socket_t& sub, zmq::socket_t& push, const zmq::message_t& first,
                   run_count& run) {
  zmq::message_t body;
  if (!first.more() || !sub.recv(body, zmq::recv_flags::dontwait))
    return false;
  drain_rest(sub, body);
  ++run.messages;
  run.bytes += body.size();
  if (u64_at8(first) + 1 == u32_at4(first)) {
    push.send(zmq::buffer(make_header(kind::stream_done, run.messages, run.bytes)),
              zmq::send_flags::none);
    run = {};
  }
  return true;
}

int serve(const peer_spec& spec) {
  const auto fail = [](const std::string& what, int code) {
    std::cerr << "ag-bench --zmq-peer: " << what << '\n';
    return code;
  };
  const pid_t parent = ::getppid();
  zmq::context_t ctx{1};
  std::optional<zmqs::curve_keys> keys;
  if (spec.path == zmq_path::tcp_curve)
    keys = read_peer_keys(spec.keys_file);
  const bool tcp = spec.path != zmq_path::ipc;
  auto sub = zmqs::subscriber(ctx, tcp ? tcp_endpoint(spec.pub_port) : "ipc://" + spec.dir + "/pub",
                              keys ? &*keys : nullptr);
  // The runtime's child lingers so that its last acknowledgements still leave; bounded.
  auto push = zmqs::pusher(ctx, tcp ? tcp_endpoint(spec.pull_port) : "ipc://" + spec.dir + "/pull",
                           keys ? &*keys : nullptr);

  zmq::pollitem_t item{sub.handle(), 0, ZMQ_POLLIN, 0};
  bool active = true; // a message arrived since the last poll timeout
  auto idle_since = steady::now();
  run_count run;
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
          return fail("no message for " + std::to_string(peer_idle_limit.count()) + " s; exiting", 3);
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
      case kind::streamed:
        if (!take_streamed(sub, push, first, run))
          return fail("a streamed message without its body frame", 2);
        break;
      case kind::exit:
        return 0;
      default:
        return fail("a message of unknown kind " + std::to_string(static_cast<int>(kind_of(first)))
                      + " (" + std::to_string(first.size()) + " bytes)",
                    2);
    }
  }
}

} // namespace

const char* to_string(zmq_path path) noexcept {
  switch (path) {
    case zmq_path::ipc:
      return "ipc";
    case zmq_path::tcp:
      return "tcp";
    case zmq_path::tcp_curve:
      return "tcp_curve";
  }
  return "?";
}

zmq_floor measure_zmq_floor(const std::string& peer_program, zmq_path path, bool quick) {
  const std::string name = std::string{"zmq floor ("} + to_string(path) + "): ";
  try {
    return measure(peer_program, path, quick);
  } catch (const zmq::error_t& e) {
    throw error(name + e.what());
  } catch (const error& e) {
    throw error(name + e.what());
  }
}

int zmq_peer_main(const std::string& spec) {
  try {
    return serve(parse_spec(spec));
  } catch (const zmq::error_t& e) {
    std::cerr << "ag-bench --zmq-peer: zmq: " << e.what() << '\n';
  } catch (const error& e) {
    std::cerr << "ag-bench --zmq-peer: " << e.what() << '\n';
  }
  return 2;
}

} // namespace ag::bench
