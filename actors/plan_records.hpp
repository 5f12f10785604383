// What the planner (actors/planner.hpp) keeps about lanes, operands and waits. Plain records:
// the planner's files share them, and its tests read them through the planner's accessors.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "actorgraph/device.hpp"
#include "actors/child_pulse.hpp"
#include "graph/collective.hpp"
#include "graph/op.hpp"

namespace ag {

// "operator `index` of lane `lane` has run" or, with `sent`, "has been sent to its runner": a
// direct read of another child's export needs only the export sent (its runner waits for the
// export's slot, its stream for the exporter's event; graph/export_slot.hpp).
struct dependency {
  uint32_t lane = 0;
  uint64_t index = 0;
  bool sent = false;
};

// One entry of a lane's queue: an operator, or the release of an operand (no index).
struct entry {
  bool release = false;
  op_desc op;
  operand_id released = 0;
  std::vector<dependency> deps; // on other lanes only; empty for nearly every operator
  // A direct transfer: every operand it reads where it lies (a peer_sum's group is in the store,
  // out of the operator's own fields), through which a taint spreads to its result.
  std::vector<operand_id> sources;
  // And the lanes they lie on (known after a source is released, while the entry still waits).
  std::vector<uint32_t> source_lanes;
  // Operators of other local lanes it comes after, kept by the await operators queued before it
  // on its own lane (the runner waits for them on the completion board): a failure of one of
  // those lanes before it ran them taints what this entry writes, sent or not.
  std::vector<dependency> awaited;
  // A NaN fill standing in for an operator whose inputs were lost to a failure: it reads nothing,
  // and the awaits queued before it wait for nothing.
  bool stand_in = false;
};

// The credit of one submitted operator, given back once operator `index` of the lane that holds
// this record has run. `charged`: the lane the user's thread took it on.
struct credit {
  uint64_t index;
  uint32_t charged;
};

// One lane as the planner sees it: its device, its queue and how far its runner got.
struct plan_lane {
  device dev;
  bool remote = false; // its runner is a child process
  bool ready = false;
  bool down = false;   // its runner (and, remote, its child) is gone
  std::string failed;  // why this lane runs nothing more; empty while healthy
  uint64_t issued = 0; // operators given an index (1..issued)
  uint64_t sent = 0;   // operators sent to the runner
  uint64_t done = 0;   // operators the runner acknowledged
  std::deque<entry> queue;
  // Entries sent from the first await whose operator its lane has not acknowledged on: what a
  // failure of the awaited lane taints, though already sent (planner::settle_awaits).
  std::deque<entry> unsettled;
  // Entries (operators and releases) queued, sent and acknowledged: sync() waits for releases too,
  // so that what a runner holds is exact once it returns.
  uint64_t entries = 0;
  uint64_t entries_sent = 0;
  uint64_t entries_done = 0;
  std::deque<uint64_t> in_flight; // entries_sent after each batch not yet acknowledged
  // Steps marked (planner::mark_step) and not yet all sent: where each ends among this lane's
  // entries (`entries` at its mark) and its number, 0 for one a wait sent before its mark.
  std::deque<std::pair<uint64_t, uint64_t>> step_ends;
  std::size_t device_live_bytes = 0;
  uint64_t broadcasts_received = 0; // remote: Execute messages its child has read
  std::deque<credit> credits;       // in index order
  // Remote: when its child last showed progress (read a broadcast, acknowledged), or when it last
  // fell behind after having read everything.
  std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();
  // Remote, on the shared-memory path: the heartbeat seen at the watchdog's last look.
  child_pulse pulse;
  // Remote: children started in place of dead ones so far, and whether the last of them is not
  // ready yet (its lane's entries wait for it). A restarted child counts the broadcasts it reads
  // on the sockets from when it joined: the planner adds received_base, set when it is ready.
  uint32_t restarts = 0;
  bool restarting = false;
  uint64_t received_base = 0;

  // Whether its runner takes batches now: up, healthy and (restarted) ready.
  bool takes_batches() const noexcept { return !down && failed.empty() && !restarting; }
};

// Where the planner keeps an operand: on a device lane by id, or (cpu) in a store range written
// by the operator `writer`. A tainted tensor (failure not empty) cannot be read: its operator, or
// one it depends on, failed; operators that use it are not run.
struct tensor_rec {
  uint32_t lane = 0;
  uint64_t offset = operand_ref::no_offset;
  uint64_t bytes = 0;
  dependency writer; // index 0: written before any operator (an upload)
  bool placed = true; // false: never given memory (its operator was not run)
  std::string failure;
  // Direct transfers on other lanes that read it where it lies: its release waits for them. The
  // latest of each lane stands for that lane's earlier ones (planner::add_reader), so a tensor read
  // again and again keeps at most one a lane.
  std::vector<dependency> readers;
  // A device operand of a child that other children read (CUDA IPC): where its export lies in the
  // store, and the peer_export that wrote it. export_slot == no_offset: not exported.
  uint64_t export_slot = operand_ref::no_offset;
  dependency exported;
};

// A direct read of a child's operand by another lane, until it has run: should the exporting
// child go first, the result read from its memory is tainted.
struct direct_read {
  dependency reader;
  uint32_t from = 0; // the lane read from
  operand_id out = 0;
  dependency exported; // the export it reads: until that has run, the reader may be waiting for it
  uint64_t slot = operand_ref::no_offset; // and where that export lies
};

// A tensor given memory: on `lane`, at `offset` for cpu tensors, written by `writer`.
inline tensor_rec placed_tensor(uint32_t lane, uint64_t offset, uint64_t bytes,
                                dependency writer = {}) {
  tensor_rec r;
  r.lane = lane;
  r.offset = offset;
  r.bytes = bytes;
  r.writer = writer;
  return r;
}

// A store range released while operators issued before the release may still read it.
struct pending_free {
  uint64_t offset;
  uint64_t bytes;
  std::vector<uint64_t> issued; // per lane
};

// A read of a cpu tensor, answered once its writer ran; or (shared) where a device tensor of
// a lane in this process lies, answered once its export was written.
struct pending_fetch {
  uint64_t wait;
  operand_id operand;
  bool shared = false;
};

// A piece of a device tensor too large for the store, copied to a staging range for the user's
// thread, which reads it and then gives the range back (unstage).
struct pending_piece {
  uint64_t wait;
  operand_id operand;
  dependency written;
  uint64_t offset;
  uint64_t bytes;
};

// A sync, answered once every entry queued before it has been acknowledged.
struct pending_sync {
  uint64_t wait;
  std::vector<uint64_t> entries; // per lane
};

// A request that arrived while an earlier operator waits for store space: everything after such an
// operator waits behind it, in arrival order, so that no operator is placed before one it uses.
struct held_request {
  enum class kind : uint8_t { submit, release, sync, fetch, share, piece, collective };
  kind what = kind::submit;
  op_request req;         // submit
  collective_request coll; // collective
  bool started = false;   // collective: its results were given their places
  // submit through the store in pieces: elements placed so far; collective: elements of its
  // chunk order (actors/planner_collective.cpp) placed so far
  uint64_t streamed = 0;
  operand_id operand = 0; // release, fetch, share, piece
  uint64_t first = 0;     // piece: its first byte, and its bytes
  uint64_t count = 0;
  uint64_t wait = 0;      // sync, fetch, piece: the wait it answers (and the id of its deadline)
  bool answered = false;  // sync, fetch, piece: its deadline passed while it was held
};

// What became of a submitted operator: waiting for store space, or retired once the operator
// `retire` has run (index 0: nothing left to run; it was stored at once or not run at all).
struct placement {
  bool no_space = false;
  dependency retire;
};

// What a user's thread waits for on the completion board instead of asking the executor: a read
// is answered once operator `index` of `lane` has run (the tensor is at `offset` in the store), a
// sync once each lane acknowledged `entries[lane]` entries; either only while nothing failed on
// the board and its fault count is still `faults`. Invalid: ask the executor.
struct wait_ticket {
  bool valid = false;
  uint64_t faults = 0;
  uint32_t lane = 0;
  uint64_t index = 0;
  uint64_t offset = 0;
  std::vector<uint64_t> entries;
};

} // namespace ag
