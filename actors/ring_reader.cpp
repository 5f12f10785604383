#include "actors/ring_reader.hpp"

#include <string>
#include <thread>
#include <vector>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/poll_loop.hpp"
#include "actors/protocol.hpp"
#include "actors/runner_answers_to.hpp"
#include "ipc/shm_channel.hpp"
#include "ipc/wire.hpp"

namespace ag {

namespace {

// How long one round waits for a frame before the actor looks at its mailbox (an exit): a round
// after one that read nothing waits longer, so that an idle child wakes rarely.
constexpr std::chrono::milliseconds round_slice{20};
constexpr std::chrono::milliseconds idle_slice{100};
// How often, at least, it reports how far it has read while frames keep coming.
constexpr std::chrono::milliseconds report_period{20};

struct ring_reader_state;
using reader_actor = caf::stateful_actor<ring_reader_state>;
using reader_answers = runner_answers_to<reader_actor, caf::actor>;

struct ring_reader_state {
  ring_reader_setup setup;
  std::unique_ptr<reader_answers> answers;
  std::unique_ptr<batch_runner> runner;
  caf::actor main;
  std::vector<char> frame;
  uint64_t last_id = 0;
  uint64_t executes = 0;
  uint64_t executes_reported = 0;
  wire::shape_memo shapes; // of the steps decoded so far
  spin_learner learner;    // how long its spins for the next frame have paid
  std::chrono::steady_clock::time_point reported_at{};
  bool stopped = false; // a Destroy or a protocol error: nothing more is read
  bool busy = true;     // the last round read a frame

  broadcast_ring& ring() { return setup.channel->ring(); }
  uint32_t lane() const { return setup.runner.lane; }

  // The controller reads how far this reader got from the ring itself whenever it looks; the
  // report, at most every 20 ms while frames come, only wakes it to look (its bound and watchdog).
  void report(reader_actor* self) {
    if (executes == executes_reported)
      return;
    const auto now = std::chrono::steady_clock::now();
    if (now - reported_at < report_period)
      return;
    executes_reported = executes;
    reported_at = now;
    self->send(answers->to(), received_atom::value, executes);
  }

  static inline const char* name = "ag.ring_reader";
};

// One frame: the wire header, then the body.
void handle(reader_actor* self, const std::vector<char>& frame) {
  auto& st = self->state;
  if (frame.size() < wire::header_size)
    throw error("wire: a ring frame of " + std::to_string(frame.size()) + " bytes has no header");
  const auto h = wire::decode_header(frame.data(), wire::header_size);
  if (h.id <= st.last_id)
    throw error("wire: ring frame id " + std::to_string(h.id) + " after "
                + std::to_string(st.last_id) + " (" + wire::to_string(h.type) + ")");
  st.last_id = h.id;
  const char* body = frame.data() + wire::header_size;
  const std::size_t bytes = frame.size() - wire::header_size;
  switch (h.type) {
    case wire::msg_type::execute: {
      ++st.executes;
      st.report(self);
      wire::execute_msg m;
      wire::decode(body, bytes, m, st.shapes, st.lane());
      for (auto& b : m.batches)
        st.runner->execute(b, st.ring().readable(st.setup.reader));
      return;
    }
    case wire::msg_type::destroy:
      st.stopped = true;
      self->send(st.main, destroy_atom::value);
      return;
    default:
      throw error("wire: the ring carried " + wire::to_string(h.type)
                  + ", which only the socket carries");
  }
}

void round(reader_actor* self) {
  auto& st = self->state;
  if (st.stopped) {
    std::this_thread::sleep_for(round_slice); // until main stops this actor
    return;
  }
  try {
    // Spins only while frames come: a round after one that read nothing sleeps at once, so an
    // idle child costs nothing but a wake-up every round.
    spin_policy spin{st.busy ? st.setup.spin : std::chrono::nanoseconds{0}, {}, &st.learner};
    if (auto* board = st.setup.runner.board)
      spin.seat = board->seat(st.lane());
    auto deadline = std::chrono::steady_clock::now() + (st.busy ? round_slice : idle_slice);
    st.busy = false;
    while (!st.stopped && st.ring().read(st.setup.reader, st.frame, deadline, spin)) {
      st.busy = true;
      handle(self, st.frame);
      deadline = std::chrono::steady_clock::now(); // the rest of what is there, without waiting
    }
  } catch (const std::exception& e) {
    st.stopped = true;
    if (auto* board = st.setup.runner.board)
      board->failed(st.lane(), 0);
    self->send(st.answers->to(), failed_atom::value, st.lane(), uint64_t{0},
               std::string{"protocol error: "} + e.what());
  }
  if (st.runner->unconfirmed())
    st.runner->confirm();
  st.report(self);
}

caf::behavior ring_reader(reader_actor* self, ring_reader_setup setup, caf::actor pusher,
                          caf::actor main) {
  auto& st = self->state;
  st.setup = std::move(setup);
  st.main = std::move(main);
  st.answers = std::make_unique<reader_answers>(self, pusher);
  const auto dev = st.setup.runner.dev;
  try {
    st.runner = std::make_unique<batch_runner>(st.setup.runner, *st.answers);
  } catch (const std::exception& e) {
    self->quit(make_error(errc::device_failed, dev.str() + ": cannot start: " + e.what()));
    return {};
  }
  self->send(pusher, ready_atom::value, st.lane());
  return poll_loop(self, [self] { round(self); });
}

} // namespace

caf::actor spawn_ring_reader(caf::actor_system& sys, ring_reader_setup setup, caf::actor pusher,
                             caf::actor main) {
  return sys.spawn<caf::detached>(ring_reader, std::move(setup), std::move(pusher),
                                  std::move(main));
}

} // namespace ag
