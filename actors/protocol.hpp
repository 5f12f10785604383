// The message vocabulary of the controller's actors, in one place (CAF 0.17 atoms: at most 10
// characters), and the project's error category.
//
//   user thread -> executor:   (submit, op_request)  (release, operand_id)
//                              (fetch, operand_id) -> uint64_t store offset, once written
//                              (fetch, operand_id, first, count) -> uint64_t offset of a staging
//                              range holding those elements of a device tensor too large for the
//                              store, once copied; (unstage, offset, bytes) gives it back
//                              (sync) -> unit, once every submitted operator ran
//                              (wait_ready) -> unit, once every runner is up
//                              (stats) -> (store live, device live, batches, operators)
//                              (shutdown) -> what went wrong as the runners stopped (a child's
//                              non-zero exit code; empty: nothing), once every runner stopped
//   executor -> itself:        (flush): the end of one mailbox drain; dispatches the batch
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
//   publisher, puller, proxies, subscriber: (poll) to themselves between socket/process polls
//   child: stream actor -> pusher: the runner messages above; subscriber -> pusher: (hello)
//          (received, count)
//          subscriber -> child main: (destroy)
#pragma once

#include <cstdint>
#include <string>

#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include "actors/errc.hpp"

namespace ag {

using submit_atom = caf::atom_constant<caf::atom("submit")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;
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
