#include "actors/subscriber.hpp"

#include <chrono>
#include <cstring>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/errc.hpp"
#include "actors/node_child.hpp"
#include "actors/poll_loop.hpp"
#include "actors/protocol.hpp"
#include "actors/report_pusher.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

// What the runner tells, straight onto the subscriber's own PUSH socket.
class direct_answers final : public runner_answers {
public:
  explicit direct_answers(report_pusher& out) : out_(out) {}
  void done(uint32_t lane, uint64_t ops_done, uint64_t entries, uint64_t live) override {
    out_.done(lane, ops_done, entries, live);
  }
  void failed(uint32_t lane, uint64_t index, std::string what) override {
    out_.failed(lane, index, std::move(what));
  }

private:
  report_pusher& out_;
};

struct subscriber_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the sockets below
  std::optional<zmq::socket_t> sock;
  uint32_t lane = 0;
  // The shared-memory path: the pusher actor reports, and the ring reader runs the batches.
  caf::actor pusher;
  // The sockets: this thread runs its lane's batches and reports on its own PUSH socket.
  std::optional<report_pusher> reports;
  std::unique_ptr<direct_answers> answers;
  std::unique_ptr<batch_runner> runner;
  caf::actor main;
  uint64_t last_id = 0; // 0: nothing heard yet
  // Started in place of a dead child: what the broadcast carries before its first Hello went out
  // before this child was there, and none of it is for its lane.
  bool joins_late = false;
  uint64_t executes = 0; // Execute messages read
  uint64_t executes_reported = 0;
  wire::shape_memo shapes; // of the steps decoded so far
  std::chrono::steady_clock::time_point reported_at{}; // when `received` last went out

  // How far this child has read, for the controller's bound on what it queues and its progress
  // watchdog: once per drain, and within a drain at least every 20 ms, so that a child that is
  // slow to decode still shows that it reads.
  void report(caf::event_based_actor* self, bool drain_over) {
    if (executes == executes_reported)
      return;
    const auto now = std::chrono::steady_clock::now();
    if (!drain_over && now - reported_at < std::chrono::milliseconds{20})
      return;
    executes_reported = executes;
    reported_at = now;
    if (reports)
      reports->received(executes);
    else
      self->send(pusher, received_atom::value, executes);
  }
  bool broken = false;  // after a protocol error nothing more is run
  // A node's child: its store, and the last Data-in id of its lane (their own sequence); with
  // data streams, their sockets and the last id each delivered.
  std::optional<node_child> node;
  uint64_t last_data_id = 0;
  std::vector<zmq::socket_t> streams;
  std::vector<uint64_t> stream_last;
  // Start-up: the pusher hears of a Hello once the broadcast and every data stream carried one
  // (a PUB drops what it sends before a subscription arrives, on each connection alike).
  bool heard_hello = false;
  std::vector<bool> stream_heard;
  bool hello_told = false;

  void maybe_tell_hello(caf::event_based_actor* self) {
    if (hello_told || !heard_hello)
      return;
    for (bool h : stream_heard)
      if (!h)
        return;
    hello_told = true;
    if (reports)
      reports->heard_hello();
    else
      self->send(pusher, hello_atom::value);
  }

  // A protocol error, reported once.
  void tell_failed(caf::event_based_actor* self, const std::string& what) {
    if (reports)
      reports->failed(lane, 0, what);
    else
      self->send(pusher, failed_atom::value, lane, uint64_t{0}, what);
  }

  static inline const char* name = "ag.subscriber";
};

using subscriber_actor = caf::stateful_actor<subscriber_state>;

// How long a child waits, at a Data-sent, for the pieces still on their way on the data streams.
constexpr std::chrono::seconds data_wait{30};

// Data-in: bytes of the store the lane's next batches read, copied in before they run. `stream`:
// the data stream it came on (-1: the broadcast connection), whose ids go up by the streams'
// count.
void take_data(subscriber_state& st, zmqs::received& r, int stream = -1) {
  if (!st.node)
    throw error("wire: data_in to a child that is not on a node");
  if (stream >= 0 && r.head.type == wire::msg_type::hello) { // this stream's connection is up
    st.stream_heard[static_cast<std::size_t>(stream)] = true;
    return;
  }
  if (r.head.type != wire::msg_type::data_in)
    throw error("wire: " + wire::to_string(r.head.type) + " on a data stream");
  if (r.head.lane != st.lane)
    throw error("wire: data_in of lane " + std::to_string(r.head.lane) + " to the child of lane "
                + std::to_string(st.lane));
  uint64_t expected = st.last_data_id + 1;
  if (stream >= 0) {
    const auto k = static_cast<uint64_t>(stream);
    const auto last = st.stream_last[k];
    expected = last == 0 ? k + 1 : last + st.streams.size();
  } else if (!st.streams.empty()) {
    throw error("wire: data_in on the broadcast connection of a child with data streams");
  }
  if (r.head.id != expected)
    throw error("wire: data_in gap: expected id " + std::to_string(expected) + ", got "
                + std::to_string(r.head.id));
  if (stream >= 0)
    st.stream_last[static_cast<std::size_t>(stream)] = r.head.id;
  else
    st.last_data_id = r.head.id;
  const uint64_t offset = wire::decode_data_offset(r.body.data(), r.body.size());
  const std::size_t size = r.data.size();
  if (offset > st.node->store_size || size > st.node->store_size - offset)
    throw error("wire: data_in to store range [" + std::to_string(offset) + ", +"
                + std::to_string(size) + ") beyond the " + std::to_string(st.node->store_size)
                + "-byte store");
  if (size > 0)
    std::memcpy(st.node->store_base + offset, r.data.data(), size);
}

// Whether every Data-in piece up to `upto` has arrived.
bool have_data(const subscriber_state& st, uint64_t upto) {
  const uint64_t n = st.streams.size();
  if (n == 0)
    return st.last_data_id >= upto;
  for (uint64_t k = 0; k < n; ++k) // stream k carries ids k + 1, k + 1 + n, ...
    if (upto >= k + 1 && st.stream_last[k] < k + 1 + (upto - 1 - k) / n * n)
      return false;
  return true;
}

// Takes what the data streams hold; waits up to `wait` for the first.
void drain_streams(subscriber_state& st, std::chrono::milliseconds wait) {
  for (std::size_t k = 0; k < st.streams.size(); ++k)
    zmqs::drain(
      st.streams[k], [&](zmqs::received& r) { take_data(st, r, static_cast<int>(k)); }, wait);
}

// Data-sent: the batches after it read pieces up to `upto`; they run once those are here.
void await_data(subscriber_state& st, const zmqs::received& r) {
  if (!st.node || r.head.lane != st.lane)
    throw error("wire: data_sent of lane " + std::to_string(r.head.lane) + " to the child of lane "
                + std::to_string(st.lane));
  const auto deadline = std::chrono::steady_clock::now() + data_wait;
  while (!have_data(st, r.head.id)) {
    if (st.streams.empty() || std::chrono::steady_clock::now() > deadline)
      throw error("wire: data_sent names piece " + std::to_string(r.head.id) + " of lane "
                  + std::to_string(st.lane) + ", which did not arrive"
                  + (st.streams.empty() ? "" : " within 30 s"));
    std::vector<zmq::socket_t*> socks;
    for (auto& s : st.streams)
      socks.push_back(&s);
    if (!zmqs::wait_any(socks).empty())
      drain_streams(st, std::chrono::milliseconds{0});
  }
}

void handle(subscriber_actor* self, zmqs::received& r) {
  auto& st = self->state;
  if (st.broken) { // after a protocol error only Destroy is still honoured
    if (r.head.type == wire::msg_type::destroy)
      self->send(st.main, destroy_atom::value);
    return;
  }
  if (r.head.type == wire::msg_type::data_in) {
    take_data(st, r);
    return;
  }
  if (r.head.type == wire::msg_type::data_sent) {
    await_data(st, r);
    return;
  }
  // A child may join after the first Hellos: the first message it hears must be a Hello, and from
  // then on every id is the last one plus one.
  if (st.last_id == 0 && r.head.type != wire::msg_type::hello) {
    if (st.joins_late)
      return;
    throw error("wire: first message heard is " + wire::to_string(r.head.type) + " #"
                + std::to_string(r.head.id) + ", not a hello");
  }
  // On the shared-memory path the ring carries the frames between the socket's: ids only grow.
  const bool ring = !st.runner;
  if (st.last_id != 0 && (ring ? r.head.id <= st.last_id : r.head.id != st.last_id + 1))
    throw error("wire: message gap: expected id " + std::string{ring ? "after " : ""}
                + std::to_string(st.last_id + (ring ? 0 : 1)) + ", got "
                + std::to_string(r.head.id) + " (" + wire::to_string(r.head.type) + ")");
  st.last_id = r.head.id;
  switch (r.head.type) {
    case wire::msg_type::hello:
      st.heard_hello = true;
      st.maybe_tell_hello(self);
      return;
    case wire::msg_type::execute: {
      if (ring)
        throw error("wire: an Execute frame on the socket of a child that reads the ring");
      ++st.executes; // read: counted before it is decoded
      st.report(self, false);
      wire::execute_msg m;
      wire::decode(r.body.data(), r.body.size(), m, st.shapes, st.lane);
      for (std::size_t i = 0; i < m.batches.size(); ++i) {
        const auto& b = m.batches[i];
        if (st.node) // what the batch writes to the store goes back before its Done
          if (auto writes = host_writes(b); !writes.empty()) {
            std::vector<uint64_t> ranges;
            for (const auto& w : writes)
              ranges.insert(ranges.end(), {w.offset, w.bytes});
            st.reports->writes(b.ops_after(), std::move(ranges));
          }
        // Launched here and now; the stream is synchronized (and the batches acknowledged) once
        // nothing more waits on the socket.
        st.runner->execute(b, i + 1 < m.batches.size() || zmqs::readable(*st.sock));
      }
      return;
    }
    case wire::msg_type::destroy:
      self->send(st.main, destroy_atom::value);
      return;
    default:
      throw error("wire: the controller sent " + wire::to_string(r.head.type)
                  + ", which only children send");
  }
}

caf::behavior subscriber(subscriber_actor* self, subscriber_setup setup) {
  auto& st = self->state;
  st.ctx = std::move(setup.ctx);
  st.lane = setup.lane;
  st.joins_late = setup.generation > 0;
  st.pusher = std::move(setup.pusher);
  st.main = std::move(setup.main);
  const auto lane = setup.lane;
  auto& node = setup.node;
  if (node) {
    // Every child's Hello, Execute and Destroy, and this lane's Data-in: header prefixes.
    std::vector<std::string> prefixes;
    for (auto t : {wire::msg_type::hello, wire::msg_type::execute, wire::msg_type::destroy})
      prefixes.push_back(std::string(wire::encode_header({t, 0}).data(), 4));
    const auto lane_prefix = [&](wire::msg_type t) {
      return std::string(wire::encode_header({t, 0, lane}).data(), 8);
    };
    prefixes.push_back(lane_prefix(wire::msg_type::data_sent));
    if (node->data_endpoints.empty())
      prefixes.push_back(lane_prefix(wire::msg_type::data_in));
    zmqs::curve_keys keys{node->public_key, node->secret_key, node->server_key};
    st.sock = zmqs::subscriber(*st.ctx, setup.endpoint, &keys, prefixes);
    for (const auto& at : node->data_endpoints) // stream k decrypts on I/O thread k + 1
      st.streams.push_back(zmqs::subscriber(*st.ctx, at, &keys,
                                            {lane_prefix(wire::msg_type::data_in), prefixes[0]},
                                            static_cast<int>(st.streams.size() + 1)));
    st.stream_last.assign(st.streams.size(), 0);
    st.stream_heard.assign(st.streams.size(), false);
    st.node = std::move(node);
  } else {
    st.sock = zmqs::subscriber(*st.ctx, setup.endpoint);
  }
  if (setup.runner) { // the sockets: the batches run here
    const auto dev = setup.runner->dev;
    try {
      st.reports.emplace(*st.ctx, setup.pull_endpoint, lane, dev, st.node,
                         wire::first_report_id(setup.generation));
      st.answers = std::make_unique<direct_answers>(*st.reports);
      st.runner = std::make_unique<batch_runner>(std::move(*setup.runner), *st.answers);
    } catch (const std::exception& e) {
      self->quit(make_error(errc::device_failed, dev.str() + ": cannot start: " + e.what()));
      return {};
    }
    st.reports->runner_ready();
  }
  return poll_loop(self, [=] {
    auto& st = self->state;
    auto on_error = [&](const std::exception& e) {
      if (st.broken)
        return;
      st.broken = true;
      st.tell_failed(self, std::string{"protocol error: "} + e.what());
    };
    auto wait = zmqs::drain_wait;
    if (!st.streams.empty()) { // the data streams first: what the broadcast's batches wait for
      std::vector<zmq::socket_t*> socks{&*st.sock};
      for (auto& s : st.streams)
        socks.push_back(&s);
      (void)zmqs::wait_any(socks);
      try {
        if (!st.broken)
          drain_streams(st, std::chrono::milliseconds{0});
      } catch (const std::exception& e) {
        on_error(e);
      }
      st.maybe_tell_hello(self);
      wait = std::chrono::milliseconds{0};
    }
    // A protocol error is reported once, and the drain goes on (for a Destroy).
    zmqs::drain(*st.sock, [&](zmqs::received& r) { handle(self, r); }, on_error, wait);
    if (st.runner && st.runner->unconfirmed())
      st.runner->confirm();
    st.report(self, true);
  });
}

} // namespace

caf::actor spawn_subscriber(caf::actor_system& sys, subscriber_setup setup) {
  return sys.spawn<caf::detached>(subscriber, std::move(setup));
}

} // namespace ag
