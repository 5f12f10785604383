#include "actors/puller.hpp"

#include <cstring>
#include <deque>
#include <utility>
#include <vector>
#include <unordered_map>

#include <unistd.h>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/poll_loop.hpp"
#include "actors/process_setup.hpp"
#include "actors/protocol.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/descriptors.hpp"
#include "ipc/timeline.hpp"
#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

struct puller_state {
  std::shared_ptr<zmq::context_t> ctx; // outlives the socket below
  std::optional<zmq::socket_t> sock;
  caf::actor executor;
  std::unordered_map<uint32_t, uint64_t> last_id; // per lane
  // With nodes: their children's socket, and the store their Data-out bytes go to.
  std::shared_ptr<network_setup> network;
  std::optional<zmq::socket_t> net;
  std::byte* store_base = nullptr;
  std::size_t store_size = 0;
  // Their return streams: Data-out pieces, piece i of a lane on stream (i - 1) % n; per lane, the
  // last piece id each stream delivered.
  std::vector<zmq::socket_t> returns;
  std::unordered_map<uint32_t, std::vector<uint64_t>> return_last;
  completion_board* board = nullptr; // where the user's threads wait (null: they ask the executor)
  std::shared_ptr<ag::timeline> timeline; // null: no instants
  // Lanes whose reports wait, behind a Data-done, for pieces still on their way: the last piece
  // they wait for, until when, and what came after the Data-done (with whether over TCP).
  struct parked_lane {
    uint64_t upto = 0;
    std::chrono::steady_clock::time_point deadline;
    std::deque<std::pair<zmqs::received, bool>> held;
  };
  std::unordered_map<uint32_t, parked_lane> parked;

  static inline const char* name = "ag.puller";
};

using puller_actor = caf::stateful_actor<puller_state>;

// A protocol error that one lane's child is to blame for: only that lane fails.
struct lane_error : error {
  lane_error(uint32_t lane, const std::string& what) : error(what), lane(lane) {}
  uint32_t lane;
};

// Checks that lane's messages arrive with ids 1, 2, 3, ...; a child started in place of a dead one
// begins its own run of ids with a Ready (wire::first_report_id of its generation). False: a
// message of a generation before the lane's last, which a dead child sent before it went (still
// on its way when its successor spoke): nothing is done with it.
bool check_sequence(puller_state& st, uint32_t lane, const wire::header& h) {
  const uint64_t id = h.id;
  if (lane == cpu_lane) // the controller's own: no child speaks for it
    throw error("wire: a child's message names lane 0, the controller's cpu");
  auto& last = st.last_id[lane];
  const uint32_t generation = wire::report_generation(id);
  const uint32_t current = wire::report_generation(last == 0 ? 1 : last);
  if (generation < current)
    return false;
  if (generation > current && wire::starts_generation(h)) {
    last = id;
    st.return_last.erase(lane); // its Data-out pieces count from 1 again
    return true;
  }
  if (id != last + 1)
    throw lane_error(lane, "wire: message " + std::to_string(id) + " from lane "
                             + std::to_string(lane) + " after message " + std::to_string(last)
                             + " (a gap or a replay)");
  last = id;
  return true;
}

// A lane's messages come from where that lane runs: a node's lane from that node's identity over
// TCP (`user`), a local lane over the local socket (user empty).
void check_sender(puller_state& st, uint32_t lane, const std::string& user, bool tcp) {
  const std::string expected =
    st.network && lane < st.network->lane_node.size() ? st.network->lane_node[lane] : "";
  if (tcp && user != expected)
    throw error("wire: a message for lane " + std::to_string(lane) + " from node \"" + user
                + "\", " + (expected.empty() ? "but that lane is local" : "not " + expected)
                + " (forged)");
  if (!tcp && !expected.empty())
    throw error("wire: a message for lane " + std::to_string(lane) + " (on " + expected
                + ") over the local socket (forged)");
}

// Data-out bytes into the store at their offset, checked against its size.
void store_piece(puller_state& st, const zmqs::received& r) {
  const uint64_t offset = wire::decode_data_offset(r.body.data(), r.body.size());
  const std::size_t bytes = r.data.size();
  if (offset > st.store_size || bytes > st.store_size - offset)
    throw lane_error(r.head.lane, "wire: data_out to store range [" + std::to_string(offset)
                                    + ", +" + std::to_string(bytes) + ") beyond the "
                                    + std::to_string(st.store_size) + "-byte store");
  if (bytes > 0)
    std::memcpy(st.store_base + offset, r.data.data(), bytes);
}

// A Data-out piece on return stream k: from the lane's node, next in that stream's order.
void take_piece(puller_state& st, zmqs::received& r, std::size_t k) {
  if (r.head.type != wire::msg_type::data_out)
    throw error("wire: " + wire::to_string(r.head.type) + " on a return stream");
  const uint32_t lane = r.head.lane;
  check_sender(st, lane, r.user(), true);
  auto& last = st.return_last[lane];
  last.resize(st.returns.size());
  const uint64_t n = st.returns.size();
  const uint64_t expected = last[k] == 0 ? k + 1 : last[k] + n;
  if (r.head.id != expected)
    throw lane_error(lane, "wire: data_out gap on return stream " + std::to_string(k)
                             + ": expected piece " + std::to_string(expected) + ", got "
                             + std::to_string(r.head.id));
  last[k] = r.head.id;
  store_piece(st, r);
}

// Whether every Data-out piece of `lane` up to `upto` has arrived.
bool have_pieces(puller_state& st, uint32_t lane, uint64_t upto) {
  const uint64_t n = st.returns.size();
  const auto& last = st.return_last[lane];
  for (uint64_t k = 0; k < n && k + 1 <= upto; ++k) // stream k carries k + 1, k + 1 + n, ...
    if ((k < last.size() ? last[k] : 0) < k + 1 + (upto - 1 - k) / n * n)
      return false;
  return true;
}

// How long the reports wait, at a Data-done, for pieces still on their way on the return streams.
constexpr std::chrono::seconds piece_wait{30};

void drain_returns(puller_state& st, std::chrono::milliseconds wait) {
  for (std::size_t k = 0; k < st.returns.size(); ++k)
    zmqs::drain(st.returns[k], [&](zmqs::received& r) { take_piece(st, r, k); }, wait);
}

template <class Msg>
uint32_t decoded_lane(const zmqs::received& r) {
  Msg m;
  wire::decode(r.body.data(), r.body.size(), m);
  return m.lane;
}

// The lane a child's message speaks for (decoding its body where the lane is there).
uint32_t lane_of(const zmqs::received& r) {
  switch (r.head.type) {
    case wire::msg_type::ready: return decoded_lane<wire::ready_msg>(r);
    case wire::msg_type::done: return decoded_lane<wire::done_msg>(r);
    case wire::msg_type::failed: return decoded_lane<wire::failed_msg>(r);
    case wire::msg_type::received: return decoded_lane<wire::received_msg>(r);
    default: return r.head.lane;
  }
}

void handle_now(puller_actor* self, zmqs::received& r, bool tcp);

// A child's message: handled now, or held behind its lane's Data-done until the pieces it names
// are in the store (the other lanes' reports go on meanwhile).
void handle(puller_actor* self, zmqs::received& r, bool tcp) {
  auto& parked = self->state.parked;
  // The common case: nothing to decode twice. A pulse is only a sign of life: never held.
  if (parked.empty() || r.head.type == wire::msg_type::pulse) {
    handle_now(self, r, tcp);
    return;
  }
  if (auto p = parked.find(lane_of(r)); p != parked.end()) {
    // A new child of the lane speaks: what its dead predecessor left parked goes with it.
    if (!wire::starts_generation(r.head)) {
      p->second.held.emplace_back(std::move(r), tcp);
      return;
    }
    parked.erase(p);
  }
  handle_now(self, r, tcp);
}

// The lanes whose pieces are all in: their held reports, in order (one may hold its lane again).
// A lane whose pieces did not come by its deadline is a protocol error of that lane.
void release_parked(puller_actor* self) {
  auto& st = self->state;
  std::vector<uint32_t> ready;
  for (const auto& [lane, p] : st.parked) {
    if (have_pieces(st, lane, p.upto))
      ready.push_back(lane);
    else if (std::chrono::steady_clock::now() > p.deadline) {
      const auto upto = p.upto;
      const auto l = lane;
      st.parked.erase(l); // what it held goes with the lane
      throw lane_error(l, "wire: data_done names piece " + std::to_string(upto) + " of lane "
                            + std::to_string(l) + ", which did not arrive within 30 s");
    }
  }
  for (const uint32_t lane : ready) {
    auto held = std::move(st.parked.at(lane).held);
    st.parked.erase(lane);
    while (!held.empty()) {
      auto [r, tcp] = std::move(held.front());
      held.pop_front();
      handle(self, r, tcp);
    }
  }
}

// An instant on the puller's track: when an acknowledgement of `lane` reached the controller.
void mark(puller_state& st, const char* what, uint32_t lane, uint64_t ops) {
  if (!st.timeline)
    return;
  const auto now = timeline::clock::now();
  st.timeline->span(::getpid(), puller_track, what, "puller", now, now,
                    {{"lane", std::to_string(lane), true}, {"ops", std::to_string(ops), true}});
}

void handle_now(puller_actor* self, zmqs::received& r, bool tcp) {
  auto& st = self->state;
  const auto* data = r.body.data();
  const auto size = r.body.size();
  const std::string user = tcp ? r.user() : std::string{};
  // False: a dead child's message, left alone.
  auto check = [&](uint32_t lane) {
    check_sender(st, lane, user, tcp);
    return check_sequence(st, lane, r.head);
  };
  switch (r.head.type) {
    case wire::msg_type::pulse: { // the child's main thread, on a socket of its own: no order
      if (r.head.lane == cpu_lane)
        throw error("wire: a child's pulse names lane 0, the controller's cpu");
      check_sender(st, r.head.lane, user, tcp);
      uint64_t running = 0;
      try {
        running = wire::decode_pulse(data, size);
      } catch (const std::exception& e) {
        throw lane_error(r.head.lane, e.what());
      }
      if (st.board && r.head.lane < st.board->lanes()) { // the watchdog's look (child_pulse)
        st.board->running(r.head.lane, running);
        st.board->beat(r.head.lane);
      }
      return;
    }
    case wire::msg_type::data_out:
      if (check(r.head.lane))
        store_piece(st, r);
      return;
    case wire::msg_type::data_done: {
      if (!check(r.head.lane))
        return;
      if (!tcp)
        throw lane_error(r.head.lane, "wire: data_done over the local socket");
      if (st.returns.empty())
        throw lane_error(r.head.lane, "wire: data_done from a lane without return streams");
      const uint64_t upto = wire::decode_data_done(data, size);
      if (!have_pieces(st, r.head.lane, upto)) // what follows waits for them
        st.parked[r.head.lane] = {upto, std::chrono::steady_clock::now() + piece_wait, {}};
      return;
    }
    case wire::msg_type::ready: {
      wire::ready_msg m;
      wire::decode(data, size, m);
      if (!check(m.lane))
        return;
      self->send(st.executor, ready_atom::value, m.lane);
      return;
    }
    case wire::msg_type::done: {
      wire::done_msg m;
      wire::decode(data, size, m);
      if (!check(m.lane))
        return;
      mark(st, "done", m.lane, m.ops_done);
      if (st.board) { // the user's waiting threads see it now; the executor right after
        st.board->completed(m.lane, m.ops_done, m.entries);
        st.board->notify();
      }
      self->send(st.executor, done_atom::value, m.lane, m.ops_done, m.entries, m.device_bytes);
      return;
    }
    case wire::msg_type::failed: {
      wire::failed_msg m;
      wire::decode(data, size, m);
      if (!check(m.lane))
        return;
      mark(st, "failed", m.lane, m.index);
      if (st.board) // before any count after it: a count past the failure is never success
        st.board->failed(m.lane, m.index);
      self->send(st.executor, failed_atom::value, m.lane, m.index, std::move(m.what));
      return;
    }
    case wire::msg_type::received: {
      wire::received_msg m;
      wire::decode(data, size, m);
      if (!check(m.lane))
        return;
      self->send(st.executor, received_atom::value, m.lane, m.count);
      return;
    }
    default:
      throw error("wire: a child sent " + wire::to_string(r.head.type)
                  + ", which only the controller sends");
  }
}

// Runs `take` (a drain); a protocol error ends it and fails the lane to blame, or every lane.
template <class Take>
void guarded(puller_actor* self, Take take) {
  auto& st = self->state;
  try {
    take();
  } catch (const lane_error& e) {
    if (st.board) // a waiting thread must not read the lane's next counts as success
      st.board->failed(e.lane, 0);
    self->send(st.executor, failed_atom::value, e.lane, uint64_t{0},
               std::string{"protocol error from its child: "} + e.what());
  } catch (const std::exception& e) { // a frame no lane can be blamed for
    if (st.board) // every ticket goes to the executor, which fails every child's lane
      st.board->fault();
    self->send(st.executor, failed_atom::value, no_lane, uint64_t{0},
               std::string{"protocol error from a child: "} + e.what());
  }
}

void drain(puller_actor* self, zmq::socket_t& sock, bool tcp, std::chrono::milliseconds wait) {
  guarded(self, [&] { zmqs::drain(sock, [&](zmqs::received& r) { handle(self, r, tcp); }, wait); });
}

caf::behavior puller(puller_actor* self, std::shared_ptr<zmq::context_t> ctx,
                     const std::string& endpoint, caf::actor executor,
                     std::shared_ptr<network_setup> network, std::byte* store_base,
                     std::size_t store_size, completion_board* board,
                     std::shared_ptr<ag::timeline> timeline) {
  auto& st = self->state;
  st.ctx = std::move(ctx);
  st.executor = std::move(executor);
  st.board = board;
  st.timeline = std::move(timeline);
  if (st.timeline)
    st.timeline->name_track(::getpid(), puller_track, "puller");
  try {
    st.sock = zmqs::puller(*st.ctx, endpoint);
  } catch (const zmq::error_t& e) { // no descriptor left, most likely: the runtime fails, saying so
    self->quit(make_error(errc::device_failed, socket_failure("puller", endpoint, e.what(), e.num())));
    return {};
  }
  if (network) {
    st.net.emplace(std::move(*network->pull));
    st.network = std::move(network);
    st.store_base = store_base;
    st.store_size = store_size;
    for (auto& s : st.network->returns)
      st.returns.push_back(std::move(*s));
  }
  return poll_loop(self, [=] {
    auto& st = self->state;
    if (!st.net)
      return drain(self, *st.sock, false, zmqs::drain_wait);
    std::vector<zmq::socket_t*> socks{&*st.sock, &*st.net};
    for (auto& s : st.returns)
      socks.push_back(&s);
    for (auto* s : zmqs::wait_any(socks)) {
      if (s == &*st.sock || s == &*st.net)
        drain(self, *s, s == &*st.net, std::chrono::milliseconds{0});
      else
        guarded(self, [&] { drain_returns(st, std::chrono::milliseconds{0}); });
    }
    if (!st.parked.empty())
      guarded(self, [&] { release_parked(self); });
  });
}

} // namespace

caf::actor spawn_puller(caf::actor_system& sys, std::shared_ptr<zmq::context_t> ctx,
                        std::string endpoint, caf::actor executor,
                        std::shared_ptr<network_setup> network, std::byte* store_base,
                        std::size_t store_size, completion_board* board,
                        std::shared_ptr<timeline> timeline) {
  return sys.spawn<caf::detached>(puller, std::move(ctx), std::move(endpoint), std::move(executor),
                                  std::move(network), store_base, store_size, board,
                                  std::move(timeline));
}

} // namespace ag
