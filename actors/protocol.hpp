// The message vocabulary of the controller's actors, in one place (CAF 0.17 atoms: at most 10
// characters), and the project's error category.
//
//   user thread -> executor:   (submit, op_request)  (submit, collective_request)
//                              (release, operand_id)
//                              (fetch, operand_id) -> uint64_t store offset, once written
//                              (fetch, operand_id, first, count) -> uint64_t offset of a staging
//                              range holding those bytes of a device tensor too large for the
//                              store, once copied; (unstage, offset, bytes) gives it back
//                              (sync) -> unit, once every submitted operator ran
//                              (wait_ready) -> unit, once every runner is up
//                              (stats) -> (store live, device live, batches, operators,
//                              restarts)
//                              (shutdown) -> what went wrong as the runners stopped (a child's
//                              non-zero exit code; empty: nothing), once every runner stopped
//                              (ticket, operand_id, slot): the wait_ticket of a read the user's
//                              thread may wait for on the completion board, left in the slot;
//                              (ticket, slot): the same for a sync
//   executor -> itself:        (flush): the end of one mailbox drain; dispatches the batch
//                              (resend): broadcasts that waited for room on the ring, again
//   executor -> runner:        (execute, batch)
//   runner -> executor:        (ready, lane)  (done, lane, ops done, device live bytes)
//                              (failed, lane, op index, what)
// Process mode (the runner of a device lane is a child process):
//   executor -> publisher:     (publish, wire::execute_msg)  (hello: until every child is ready)
//                              (destroy)
//   puller -> executor:        what the children pushed, as the runner messages above
//   executor -> runner proxy:  (shutdown): its child exits (or is killed), then it quits
//                              (kill): SIGKILL its child (it made no progress for
//                              progress_timeout)
//   puller -> executor:        (received, lane, count): Execute messages that child has read
//   executor -> itself:        (expire, wait id): a sync, a fetch or a wait for store space
//                              reached its deadline
//                              (progress): the watchdog's look at children behind in reading
//                              (wait_ready, start_deadline, lane, generation): a restarted
//                              child's start_timeout passed
//   publisher, puller, proxies, subscriber: (poll) to themselves between socket/process polls
//   child: stream actor -> pusher: the runner messages above; subscriber -> pusher: (hello)
//          (received, count)
//          subscriber -> child main: (destroy)
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>

#include "actors/errc.hpp"
#include "actors/plan_records.hpp"
#include "actors/ticket_slot.hpp"
#include "graph/collective.hpp"
#include "graph/op.hpp"

namespace ag {

using submit_atom = caf::atom_constant<caf::atom("submit")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;
using share_atom = caf::atom_constant<caf::atom("share")>;
using sync_atom = caf::atom_constant<caf::atom("sync")>;
using wait_ready_atom = caf::atom_constant<caf::atom("waitready")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using execute_atom = caf::atom_constant<caf::atom("execute")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using failed_atom = caf::atom_constant<caf::atom("failed")>;
using publish_atom = caf::atom_constant<caf::atom("publish")>;
using hello_atom = caf::atom_constant<caf::atom("hello")>;
using destroy_atom = caf::atom_constant<caf::atom("destroy")>;
using poll_atom = caf::atom_constant<caf::atom("poll")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;
using received_atom = caf::atom_constant<caf::atom("received")>;
using kill_atom = caf::atom_constant<caf::atom("kill")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using unstage_atom = caf::atom_constant<caf::atom("unstage")>;
using ticket_atom = caf::atom_constant<caf::atom("ticket")>;
using resend_atom = caf::atom_constant<caf::atom("resend")>;
using beat_atom = caf::atom_constant<caf::atom("beat")>; // a child's runner entered an operator

// What a user's thread submitted while the runtime marks steps (actors/step_submits.hpp): an
// operator, or (released != 0) the release of an operand; in the order they were made.
struct submission {
  op_request req;
  operand_id released = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, submission& x) {
  return f(caf::meta::type_name("submission"), x.req, x.released);
}

// The tag of the start-up deadline message the executor sends itself.
struct start_deadline_t {};
constexpr start_deadline_t start_deadline{};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, start_deadline_t&) {
  return f(caf::meta::type_name("start_deadline"));
}

// The executor's answer to stats: store live, device live, batches, operators, restarts.
using stats_reply = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>;

// The runners' answers: what a stream actor reports to (the executor; in a child, its pusher;
// ag-replay's own actor).
using runner_answers_actor =
  caf::typed_actor<caf::reacts_to<ready_atom, uint32_t>,
                   caf::reacts_to<done_atom, uint32_t, uint64_t, uint64_t, uint64_t>,
                   caf::reacts_to<failed_atom, uint32_t, uint64_t, std::string>>;

// The executor (actors/executor.hpp): the user's threads, the runners and the puller, itself.
using executor_actor = caf::typed_actor<
  caf::reacts_to<submit_atom, op_request>, caf::reacts_to<submit_atom, collective_request>,
  caf::reacts_to<release_atom, operand_id>,
  caf::replies_to<fetch_atom, operand_id>::with<uint64_t>,
  caf::replies_to<fetch_atom, operand_id, uint64_t, uint64_t>::with<uint64_t>,
  caf::replies_to<share_atom, operand_id>::with<uint64_t>,
  caf::reacts_to<unstage_atom, uint64_t, uint64_t>, caf::reacts_to<sync_atom>,
  caf::reacts_to<wait_ready_atom>,
  caf::replies_to<stats_atom>::with<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>,
  caf::replies_to<shutdown_atom>::with<std::string>,
  caf::reacts_to<ready_atom, uint32_t>, caf::reacts_to<done_atom, uint32_t, uint64_t, uint64_t, uint64_t>,
  caf::reacts_to<failed_atom, uint32_t, uint64_t, std::string>,
  caf::reacts_to<received_atom, uint32_t, uint64_t>, caf::reacts_to<flush_atom>,
  caf::reacts_to<expire_atom, uint64_t>, caf::reacts_to<progress_atom>,
  caf::reacts_to<wait_ready_atom, start_deadline_t>,
  caf::reacts_to<wait_ready_atom, start_deadline_t, uint32_t, uint32_t>,
  caf::reacts_to<ticket_atom, operand_id, ticket_slot_ptr>,
  caf::reacts_to<ticket_atom, ticket_slot_ptr>, caf::reacts_to<resend_atom>,
  caf::reacts_to<hello_atom>,
  caf::reacts_to<submit_atom, std::vector<submission>, bool>>;

// One device's runner in this process (actors/stream_actor.hpp).
using stream_actor = caf::typed_actor<caf::reacts_to<execute_atom, batch>>;

// The controller's handle on one child (actors/runner_proxy.hpp); poll is its own.
using runner_proxy_actor =
  caf::typed_actor<caf::reacts_to<shutdown_atom>, caf::reacts_to<kill_atom>,
                   caf::reacts_to<poll_atom>>;

// The lane of a failure that no lane can be blamed for (a malformed frame from a child).
constexpr uint32_t no_lane = UINT32_MAX;

// The project's error category: the context of every such error is one string that says what
// failed (device, op, reason).
constexpr caf::atom_value error_category = caf::atom("actorgraph");

caf::error make_error(errc code, std::string what);

// The text of any error that reaches the user's thread: our own category's message as it is, CAF's
// errors (a request timeout, a dead actor) described, with `what` saying which wait it was.
std::string describe(const caf::error& err, const std::string& what);

} // namespace ag
