#include "actors/stream_actor.hpp"

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <caf/all.hpp>

#include "actors/batch_runner.hpp"
#include "actors/protocol.hpp"
#include "actors/runner_answers_to.hpp"
#include "graph/op.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/futex_wait.hpp"

namespace ag {

namespace {

struct stream_state;
using stream_self = stream_actor::stateful_pointer<stream_state>;
using stream_answers = runner_answers_to<std::remove_pointer_t<stream_self>, runner_answers_actor>;

struct stream_state {
  std::unique_ptr<stream_answers> answers;
  spin_learner learner; // how long its lingers have paid
  std::unique_ptr<batch_runner> runner;
  static inline const char* name = "ag.stream";
};

stream_actor::behavior_type stream_behavior(stream_self self, runner_answers_actor report_to,
                                            batch_runner_setup setup,
                                            std::chrono::nanoseconds linger) {
  auto& st = self->state;
  const auto dev = setup.dev;
  const auto lane = setup.lane;
  const spin_seat_ref seat = setup.board != nullptr ? setup.board->seat(lane) : spin_seat_ref{};
  st.answers = std::make_unique<stream_answers>(self, report_to);
  try {
    st.runner = std::make_unique<batch_runner>(std::move(setup), *st.answers);
  } catch (const std::exception& e) {
    self->quit(make_error(errc::device_failed, dev.str() + ": cannot start: " + e.what()));
    return stream_actor::behavior_type::make_empty_behavior();
  }
  self->send(report_to, ready_atom::value, lane);
  return {
    [=](execute_atom, const batch& b) {
      self->state.runner->execute(b, !self->mailbox().empty());
      if (!self->state.runner->unconfirmed())
        spin_until([self] { return !self->mailbox().empty(); },
                   spin_policy{linger, seat, &self->state.learner});
    },
  };
}

} // namespace

stream_actor spawn_stream_actor(caf::actor_system& sys, runner_answers_actor report_to,
                                uint32_t lane, device dev, std::byte* store_base,
                                std::size_t store_size, bool pin_store,
                                std::shared_ptr<ag::timeline> timeline, completion_board* board,
                                std::chrono::nanoseconds linger,
                                std::shared_ptr<peer_directory> peers,
                                export_wait_policy exports,
                                std::shared_ptr<lane_streams> streams, step_policy steps) {
  batch_runner_setup setup{lane,  dev,          store_base,       store_size, pin_store,
                           std::move(timeline), board,            std::move(peers),
                           exports,             std::move(streams), steps};
  return sys.spawn<caf::detached>(stream_behavior, std::move(report_to), std::move(setup), linger);
}

} // namespace ag
