#include "actors/executor.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <unistd.h>

#include <caf/all.hpp>

#include "actors/flow_control.hpp"
#include "actors/process_env.hpp"
#include "actors/store_fence.hpp"
#include "actors/protocol.hpp"
#include "actors/publisher.hpp"
#include "actors/puller.hpp"
#include "actors/runner_proxy.hpp"
#include "actors/stream_actor.hpp"
#include "graph/deadline.hpp"
#include "graph/op.hpp"
#include "ipc/store_allocator.hpp"
#include "ipc/timeline.hpp"
#include "ipc/trace.hpp"
#include "ipc/wire.hpp"

namespace ag {

namespace {

constexpr uint32_t cpu_lane = 0;

// "operator `index` of lane `lane` has run".
struct dependency {
  uint32_t lane = 0;
  uint64_t index = 0;
};

// One entry of a lane's queue: an operator, or the release of an operand (no index).
struct entry {
  bool release = false;
  op_desc op;
  operand_id released = 0;
  std::vector<dependency> deps; // on other lanes only; empty for nearly every operator
};

// The credit of one submitted operator, given back once operator `index` of the lane that holds
// this record has run. `charged`: the lane the user's thread took it on.
struct credit {
  uint64_t index;
  uint32_t charged;
};

struct lane {
  device dev;
  caf::actor runner; // a stream actor, or (remote) the runner proxy of the lane's child
  bool remote = false;
  bool ready = false;
  bool down = false;
  std::string failed; // why this lane runs nothing more; empty while healthy
  uint64_t issued = 0; // operators given an index (1..issued)
  uint64_t sent = 0;   // operators sent to the runner
  uint64_t done = 0;   // operators the runner acknowledged
  std::deque<entry> queue;
  // Entries (operators and releases) queued, sent and acknowledged: sync() waits for releases too,
  // so that what a runner holds is exact once it returns.
  uint64_t entries = 0;
  uint64_t entries_sent = 0;
  uint64_t entries_done = 0;
  std::deque<uint64_t> in_flight; // entries_sent after each batch not yet acknowledged
  std::size_t device_live_bytes = 0;
  uint64_t broadcasts_received = 0; // remote: Execute messages its child has read
  std::deque<credit> credits;       // in index order
  // Remote: when its child last showed progress (read a broadcast, acknowledged), or when it last
  // fell behind after having read everything.
  steady_clock::time_point last_progress = steady_clock::now();
};

// Where the executor keeps an operand: on a device lane by id, or (cpu) in a store range written
// by the operator `writer`. A tainted tensor (failure not empty) cannot be read: its operator, or
// one it depends on, failed; operators that use it are not run.
struct tensor_rec {
  uint32_t lane = cpu_lane;
  uint64_t offset = operand_ref::no_offset;
  uint64_t bytes = 0;
  dependency writer; // index 0: written before any operator (an upload)
  bool placed = true; // false: never given memory (its operator was not run)
  std::string failure;
};

// A tensor given memory: on `lane`, at `offset` for cpu tensors, written by `writer`.
tensor_rec placed(uint32_t lane, uint64_t offset, uint64_t bytes, dependency writer) {
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

struct pending_fetch {
  uint64_t id;
  caf::response_promise promise;
  operand_id operand;
};

// A piece of a device tensor too large for the store, copied to a staging range for the user's
// thread, which reads it and then gives the range back (unstage).
struct pending_piece {
  uint64_t id;
  caf::response_promise promise;
  operand_id operand;
  dependency written;
  uint64_t offset;
  uint64_t bytes;
};

struct pending_sync {
  uint64_t id;
  caf::response_promise promise;
  std::vector<uint64_t> entries; // per lane
};

// A request that arrived while an earlier operator waits for store space: everything after such an
// operator waits behind it, in arrival order, so that no operator is placed before one it uses.
struct held_request {
  enum class kind : uint8_t { submit, release, sync, fetch, piece };
  kind what = kind::submit;
  op_request req;                 // submit
  uint64_t streamed = 0;          // submit through the store in pieces: elements placed so far
  operand_id operand = 0;         // release, fetch, piece
  uint64_t first = 0;             // piece: its first element, and its count
  uint64_t count = 0;
  caf::response_promise promise;  // sync, fetch
  uint64_t wait_id = 0;           // sync, fetch: the id of its deadline
  bool answered = false;          // sync, fetch: its deadline passed while it was held
};

// One Execute broadcast, for the bound on what a child that does not read makes the controller
// queue.
struct broadcast_rec {
  uint64_t seq;        // 1, 2, ...
  uint64_t cumulative; // bytes of every broadcast up to this one
};

struct executor_state {
  std::vector<lane> lanes;
  std::byte* store_base = nullptr;
  std::unique_ptr<store_allocator> store;
  std::unordered_map<operand_id, tensor_rec> tensors;
  std::vector<pending_free> frees;
  std::vector<pending_fetch> fetches;
  std::vector<pending_piece> pieces;
  std::unordered_map<uint64_t, uint64_t> staged; // pieces handed to a user's thread: offset, bytes
  std::vector<pending_sync> syncs;
  uint64_t next_wait_id = 1;
  std::chrono::milliseconds wait_timeout{60000};
  std::vector<caf::response_promise> ready_waiters;
  std::string startup_failure;
  // Process mode: the sockets' actors, stopped after every lane; the broadcasts not yet read by
  // every child.
  caf::actor publisher;
  caf::actor puller;
  bool publisher_down = false;
  bool puller_down = false;
  std::deque<broadcast_rec> broadcasts; // after broadcast_base_seq, which every child has read
  uint64_t broadcast_base_seq = 0;
  uint64_t broadcast_base_bytes = 0;
  uint64_t broadcast_seq = 0;
  uint64_t broadcast_bytes = 0;
  std::size_t max_queued_bytes = std::numeric_limits<std::size_t>::max();
  std::chrono::milliseconds progress_timeout = std::chrono::milliseconds::max();
  bool progress_check_scheduled = false;
  std::shared_ptr<flow_control> flow;
  std::deque<held_request> held;
  std::unordered_map<operand_id, uint32_t> held_refs; // operands the held operators name
  uint64_t store_wait_id = 0;   // the deadline of the held head's wait for store space
  bool store_wait_over = false; // that deadline passed: the head fails instead of waiting
  caf::response_promise shutdown_waiter;
  std::string shutdown_problems; // what went wrong as the runners stopped; empty: nothing
  bool flush_scheduled = false;
  bool stopping = false;
  // Failures not yet reported by a sync(): the first, and how many more.
  std::string unreported;
  uint64_t unreported_more = 0;
  uint64_t batches = 0;
  uint64_t operators = 0;
  std::shared_ptr<trace::writer> trace;
  std::shared_ptr<ag::timeline> timeline;

  // Records an acknowledgement as it arrived, in its wire encoding (docs/TRACE.md).
  template <class Msg>
  void record_ack(uint32_t lane, wire::msg_type type, Msg msg) {
    if (trace)
      trace->write(trace::ack_rec{lane, type, wire::encode(msg)});
  }

  static inline const char* name = "ag.executor";

  // A failed lane runs nothing more: nothing waits for it.
  bool satisfied(const dependency& d) const {
    return lanes[d.lane].done >= d.index || !lanes[d.lane].failed.empty();
  }

  // A failed lane runs nothing more; a child process, though, may still be running what it was
  // sent until it is down (reaped): only then is a store range it could write free again.
  static bool quiet(const lane& l) { return !l.failed.empty() && (!l.remote || l.down); }

  bool all_done(const std::vector<uint64_t>& issued) const {
    for (std::size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i].done < issued[i] && !quiet(lanes[i]))
        return false;
    return true;
  }

  bool all_entries_done(const std::vector<uint64_t>& entries) const {
    for (std::size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i].entries_done < entries[i] && lanes[i].failed.empty())
        return false;
    return true;
  }

  std::vector<uint64_t> entries_now() const {
    std::vector<uint64_t> v(lanes.size());
    for (std::size_t i = 0; i < lanes.size(); ++i)
      v[i] = lanes[i].entries;
    return v;
  }

  std::vector<uint64_t> issued_now() const {
    std::vector<uint64_t> v(lanes.size());
    for (std::size_t i = 0; i < lanes.size(); ++i)
      v[i] = lanes[i].issued;
    return v;
  }

  bool all_ready() const {
    for (const auto& l : lanes)
      if (!l.ready)
        return false;
    return true;
  }
};

using executor_actor = caf::stateful_actor<executor_state>;

// What became of a submitted operator: waiting for store space, or retired once the operator
// `retire` has run (index 0: nothing left to run; it was stored at once or not run at all).
struct placement {
  bool no_space = false;
  dependency retire;
};

// The progress watchdog looks this often at children that are behind.
std::chrono::milliseconds progress_slice(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 4, std::chrono::milliseconds{10}, std::chrono::milliseconds{250});
}

// Upper bound of an Execute message's encoded size (docs/PROTOCOL.md): header, lengths, and 85
// bytes per operator, 8 per released operand.
uint64_t wire_bytes(const wire::execute_msg& m) {
  uint64_t n = wire::header_size + 5;
  for (const auto& b : m.batches)
    n += 4 + 8 + 5 + 85 * b.ops.size() + 5 + 8 * b.no_hold.size();
  return n;
}

class executor_logic {
public:
  explicit executor_logic(executor_actor* self) : self_(self), st_(self->state) {}

  // A failure the next sync() reports (once).
  void record(const std::string& what) {
    if (st_.unreported.empty())
      st_.unreported = what;
    else
      ++st_.unreported_more;
  }

  caf::error take_unreported() {
    std::string what = std::move(st_.unreported);
    if (st_.unreported_more > 0)
      what += " (and " + std::to_string(st_.unreported_more) + " more failures)";
    st_.unreported.clear();
    st_.unreported_more = 0;
    return make_error(errc::device_failed, std::move(what));
  }

  void schedule_flush() {
    if (!st_.flush_scheduled) {
      st_.flush_scheduled = true;
      self_->send(self_, flush_atom::value);
    }
  }

  // Appends an operator to a lane's queue; returns its index there. deps: the writers of its
  // inputs; only those on other lanes are kept (and only moves have any).
  uint64_t enqueue(uint32_t l, const op_desc& op, std::initializer_list<dependency> deps = {}) {
    auto& ln = st_.lanes[l];
    entry e;
    e.op = op;
    for (const auto& d : deps)
      if (d.lane != l && d.index > 0)
        e.deps.push_back(d);
    ln.queue.push_back(std::move(e));
    ++ln.entries;
    return ++ln.issued;
  }

  // The result of an operator that will not run: readers get `why`.
  void taint(operand_id out, std::string why) {
    auto& rec = st_.tensors[out];
    rec.placed = false;
    rec.failure = std::move(why);
    record(rec.failure);
  }

  std::string store_full(uint64_t bytes, const std::string& what) const {
    std::string why = "store full: " + what + " needs " + std::to_string(bytes) + " bytes; "
                      + std::to_string(st_.store->live_bytes()) + " of "
                      + std::to_string(st_.store->capacity())
                      + " bytes are held (graph_option::store_bytes)";
    if (st_.store_wait_over)
      why += "; no acknowledgement freed enough within " + duration_string(st_.wait_timeout);
    return why;
  }

  // No store range for `bytes` now: the operator waits when acknowledgements still to come will
  // free ranges (and its deadline has not passed); otherwise its result is tainted with why.
  placement no_space(operand_id out, uint64_t bytes, const std::string& what) {
    if (!st_.frees.empty() && bytes <= st_.store->capacity() && !st_.store_wait_over)
      return {true, {}};
    taint(out, store_full(bytes, what));
    return {};
  }

  // Frees a store range once every operator issued so far has run.
  void free_later(uint64_t offset, uint64_t bytes) {
    st_.frees.push_back({offset, bytes, st_.issued_now()});
  }

  std::optional<uint32_t> lane_of(const device& d) const {
    for (uint32_t i = 0; i < st_.lanes.size(); ++i)
      if (st_.lanes[i].dev == d)
        return i;
    return std::nullopt;
  }

  std::string op_name(const op_request& req) const {
    return to_string(req.kind) + " -> #" + std::to_string(req.out) + " on " + req.where.str();
  }

  // Why the operator cannot run, or empty: an unknown or tainted input, a failed lane.
  std::string blocker(const op_request& req, std::optional<uint32_t> l) const {
    if (!l)
      return op_name(req) + ": " + req.where.str() + " is not a device of this runtime";
    if (!st_.lanes[*l].failed.empty())
      return op_name(req) + ": " + st_.lanes[*l].failed;
    for (operand_id in : {req.a, req.b}) {
      if (in == 0)
        continue;
      auto it = st_.tensors.find(in);
      if (it == st_.tensors.end())
        return op_name(req) + ": operand #" + std::to_string(in) + " does not exist";
      if (!it->second.failure.empty())
        return op_name(req) + ": input #" + std::to_string(in) + " failed: " + it->second.failure;
      if (!st_.lanes[it->second.lane].failed.empty())
        return op_name(req) + ": input #" + std::to_string(in) + " is on "
               + st_.lanes[it->second.lane].failed;
    }
    return {};
  }

  // An operator from a user's thread, in arrival order: behind the held ones, if any. A transfer
  // too large to stage whole goes through the store in pieces, from the head of the held queue.
  void on_submit(op_request& req) {
    const bool was_empty = st_.held.empty();
    if (!was_empty || piecewise(req)) {
      hold(std::move(req));
      if (was_empty)
        drain_held(true);
      return;
    }
    if (!try_submit(req)) {
      hold(std::move(req));
      start_store_wait();
    }
  }

  // A piece of a device tensor for a user's thread (to_vector of a tensor too large for the
  // store): answered with a staging range once the piece is copied there.
  void on_piece(caf::response_promise rp, operand_id id, uint64_t first, uint64_t count,
                uint64_t wid) {
    held_request h;
    h.what = held_request::kind::piece;
    h.promise = std::move(rp);
    h.operand = id;
    h.first = first;
    h.count = count;
    h.wait_id = wid;
    expire_later(wid);
    const bool was_empty = st_.held.empty();
    st_.held.push_back(std::move(h));
    if (was_empty)
      drain_held(true);
  }

  void unstage(uint64_t offset, uint64_t bytes) {
    auto it = st_.staged.find(offset);
    if (it == st_.staged.end() || it->second != bytes)
      return; // not a range this executor handed out
    st_.staged.erase(it);
    st_.store->deallocate(offset, bytes);
    collect();
  }

  // Transfers larger than half the store go through it a quarter of it at a time.
  bool piecewise(const op_request& req) const {
    if (req.count * sizeof(float) <= st_.store->capacity() / 2 || req.where.is_cpu())
      return false;
    if (req.kind == op_kind::upload)
      return true;
    if (req.kind != op_kind::copy)
      return false;
    auto it = st_.tensors.find(req.a);
    return it != st_.tensors.end() && it->second.lane != cpu_lane;
  }

  uint64_t piece_elems() const {
    return std::max<uint64_t>(1, st_.store->capacity() / 4 / sizeof(float));
  }

  // Gives the user's credit for req back once `retire` has run (index 0: now).
  void settle(const op_request& req, std::optional<uint32_t> l, dependency retire) {
    if (!st_.flow)
      return;
    st_.flow->release_bytes(req.data.size() * sizeof(float));
    if (retire.index == 0 || !l) // a device the runtime does not have was charged to the cpu
      st_.flow->release(l.value_or(cpu_lane), 1);
    else
      st_.lanes[retire.lane].credits.push_back({retire.index, *l});
  }

  // Places as many pieces of the held head's transfer as the store has room for; true once every
  // piece is placed (or the transfer failed), false while it waits for room.
  bool stream_pieces(held_request& h) {
    auto& req = h.req;
    const auto l = lane_of(req.where);
    const bool upload = req.kind == op_kind::upload;
    if (h.streamed == 0) {
      if (auto why = blocker(req, l); !why.empty()) {
        taint(req.out, std::move(why));
        settle(req, l, {});
        return true;
      }
      st_.tensors[req.out] = placed(*l, operand_ref::no_offset, req.count * sizeof(float), {});
    }
    const uint32_t dst = *l;
    const tensor_rec src = upload ? tensor_rec{} : st_.tensors.at(req.a);
    dependency last{dst, st_.lanes[dst].issued};
    while (h.streamed < req.count) {
      if (!st_.lanes[dst].failed.empty())
        break; // its operand is gone with it
      const uint64_t n = std::min(piece_elems(), req.count - h.streamed);
      op_desc in; // store -> elements [streamed, streamed + n) of the destination operand
      in.kind = op_kind::copy;
      in.out = {req.out, operand_ref::no_offset};
      in.count = n;
      in.m = h.streamed;
      in.n = req.count;
      std::string lost; // why the rest of the destination is NaN
      if (!upload && !st_.lanes[src.lane].failed.empty())
        lost = st_.lanes[src.lane].failed;
      std::optional<uint64_t> off;
      if (lost.empty()) {
        off = st_.store->allocate(n * sizeof(float));
        if (!off && !st_.frees.empty() && !st_.store_wait_over)
          return false;
        if (!off)
          lost = store_full(n * sizeof(float), "a piece of " + op_name(req));
      }
      if (!lost.empty()) { // the rest of the operand is NaN, so that it is whole
        if (st_.tensors[req.out].failure.empty()) {
          st_.tensors[req.out].failure = lost;
          record(lost);
        }
        in.kind = op_kind::fill;
        in.scalar = std::numeric_limits<float>::quiet_NaN();
        last = {dst, enqueue(dst, in)};
        h.streamed += n;
        continue;
      }
      in.a = {0, *off};
      if (upload) {
        std::memcpy(st_.store_base + *off, req.data.data() + h.streamed, n * sizeof(float));
        if (st_.trace) {
          trace::store_write_rec rec{req.out, *off, {}};
          const auto* p = reinterpret_cast<const char*>(req.data.data() + h.streamed);
          rec.data.assign(p, p + n * sizeof(float));
          st_.trace->write(rec);
        }
        last = {dst, enqueue(dst, in)};
      } else {
        op_desc out; // elements [streamed, streamed + n) of the source operand -> store
        out.kind = op_kind::copy;
        out.a = {req.a, operand_ref::no_offset};
        out.out = {0, *off};
        out.count = n;
        out.m = h.streamed;
        out.n = req.count;
        const dependency written{src.lane, enqueue(src.lane, out, {src.writer})};
        last = {dst, enqueue(dst, in, {written})};
      }
      free_later(*off, n * sizeof(float));
      h.streamed += n;
    }
    // A failed destination gave its credits back already; nothing of it will be acknowledged.
    settle(req, l, st_.lanes[dst].failed.empty() ? last : dependency{});
    req.data = {};
    return true;
  }

  // A piece for a user's thread: true once answered or placed, false while it waits for room.
  bool try_piece(held_request& h) {
    if (h.answered)
      return true;
    auto it = st_.tensors.find(h.operand);
    std::string why;
    if (it == st_.tensors.end() || it->second.lane == cpu_lane || !it->second.placed)
      why = "read: operand #" + std::to_string(h.operand) + " is not a device tensor";
    else if (!it->second.failure.empty())
      why = it->second.failure;
    else if (!st_.lanes[it->second.lane].failed.empty())
      why = st_.lanes[it->second.lane].failed;
    else if (h.first > it->second.bytes / sizeof(float)
             || h.count > it->second.bytes / sizeof(float) - h.first)
      why = "read: elements [" + std::to_string(h.first) + ", +" + std::to_string(h.count)
            + ") lie outside operand #" + std::to_string(h.operand);
    if (!why.empty()) {
      h.promise.deliver(make_error(errc::device_failed, std::move(why)));
      return true;
    }
    const auto& rec = it->second;
    const uint64_t bytes = h.count * sizeof(float);
    auto off = st_.store->allocate(bytes);
    if (!off) {
      if (!st_.frees.empty() && bytes <= st_.store->capacity() && !st_.store_wait_over)
        return false;
      h.promise.deliver(make_error(errc::device_failed,
                                   store_full(bytes, "to_vector of #" + std::to_string(h.operand))));
      return true;
    }
    op_desc op;
    op.kind = op_kind::copy;
    op.a = {h.operand, operand_ref::no_offset};
    op.out = {0, *off};
    op.count = h.count;
    op.m = h.first;
    op.n = rec.bytes / sizeof(float);
    const dependency written{rec.lane, enqueue(rec.lane, op, {rec.writer})};
    st_.pieces.push_back({h.wait_id, std::move(h.promise), h.operand, written, *off, bytes});
    return true;
  }

  void on_release(operand_id id) {
    if (!st_.held.empty() && st_.held_refs.count(id) > 0) { // a held operator names it
      held_request h;
      h.what = held_request::kind::release;
      h.operand = id;
      st_.held.push_back(std::move(h));
      return;
    }
    release(id);
  }

  void hold(op_request&& req) {
    for (operand_id id : {req.out, req.a, req.b})
      if (id != 0)
        ++st_.held_refs[id];
    held_request h;
    h.what = held_request::kind::submit;
    h.req = std::move(req);
    st_.held.push_back(std::move(h));
  }

  void unhold(const op_request& req) {
    for (operand_id id : {req.out, req.a, req.b})
      if (auto it = st_.held_refs.find(id); id != 0 && it != st_.held_refs.end() && --it->second == 0)
        st_.held_refs.erase(it);
  }

  // A sync or fetch that arrived behind held operators: answered once they are placed.
  void hold_wait(held_request::kind what, caf::response_promise rp, operand_id id, uint64_t wid) {
    held_request h;
    h.what = what;
    h.promise = std::move(rp);
    h.operand = id;
    h.wait_id = wid;
    st_.held.push_back(std::move(h));
  }

  // The held head waits for store space until wait_timeout; then it fails with "store full".
  void start_store_wait() {
    st_.store_wait_over = false;
    st_.store_wait_id = st_.next_wait_id++;
    if (!no_deadline(st_.wait_timeout))
      self_->delayed_send(self_, st_.wait_timeout, expire_atom::value, st_.store_wait_id);
  }

  // Places what was held, in order, until an operator still finds no store space. fresh: the head
  // has not waited yet.
  void drain_held(bool fresh = false) {
    bool moved = fresh;
    while (!st_.held.empty()) {
      auto& h = st_.held.front();
      const uint64_t streamed = h.streamed;
      switch (h.what) {
        case held_request::kind::submit: {
          const bool placed = piecewise_head(h) ? stream_pieces(h) : try_submit(h.req);
          if (!placed) {
            if (moved || h.streamed != streamed) // a new head, or pieces placed: a new deadline
              start_store_wait();
            return schedule_flush();
          }
          unhold(h.req);
          st_.store_wait_over = false; // that deadline was this head's alone
          break;
        }
        case held_request::kind::piece:
          if (!try_piece(h)) {
            if (moved)
              start_store_wait();
            return schedule_flush();
          }
          st_.store_wait_over = false;
          break;
        case held_request::kind::release:
          release(h.operand);
          break;
        case held_request::kind::sync:
          if (!h.answered)
            st_.syncs.push_back({h.wait_id, std::move(h.promise), st_.entries_now()});
          break;
        case held_request::kind::fetch:
          if (!h.answered && !answer_fetch(h.promise, h.operand))
            st_.fetches.push_back({h.wait_id, std::move(h.promise), h.operand});
          break;
      }
      st_.held.pop_front();
      moved = true;
    }
    st_.store_wait_over = false;
    if (moved)
      schedule_flush();
  }

  // A held transfer goes in pieces once it started so, or when it is too large to stage whole.
  bool piecewise_head(const held_request& h) const { return h.streamed > 0 || piecewise(h.req); }

  // Places one operator and settles its credit; false (nothing changed) while it waits for space.
  bool try_submit(op_request& req) {
    const auto l = lane_of(req.where);
    placement p;
    if (auto why = blocker(req, l); !why.empty())
      taint(req.out, std::move(why));
    else
      p = place(*l, req);
    if (p.no_space)
      return false;
    settle(req, l, p.retire);
    return true;
  }

  // Gives back the credits of the operators lane l has run (all of them once it failed).
  void retire(uint32_t l) {
    auto& ln = st_.lanes[l];
    if (!st_.flow) {
      ln.credits.clear();
      return;
    }
    // Given back in runs of one charged lane (nearly always the lane itself): no allocation and
    // one wake-up per run on an acknowledgement.
    const bool all = !ln.failed.empty();
    while (!ln.credits.empty() && (all || ln.credits.front().index <= ln.done)) {
      const uint32_t charged = ln.credits.front().charged;
      uint64_t n = 0;
      while (!ln.credits.empty() && ln.credits.front().charged == charged
             && (all || ln.credits.front().index <= ln.done)) {
        ++n;
        ln.credits.pop_front();
      }
      st_.flow->release(charged, n);
    }
  }

  placement place(uint32_t l, op_request& req) {
    const uint64_t bytes = req.count * sizeof(float);
    switch (req.kind) {
      case op_kind::upload: return upload(l, req, bytes);
      case op_kind::copy: return move(l, req, bytes);
      default: return compute(l, req);
    }
  }

  placement upload(uint32_t l, op_request& req, uint64_t bytes) {
    auto off = st_.store->allocate(bytes);
    if (!off)
      return no_space(req.out, bytes, "from_vector -> #" + std::to_string(req.out));
    if (bytes > 0) // an empty vector's data() may be null, which memcpy must not get
      std::memcpy(st_.store_base + *off, req.data.data(), bytes);
    if (st_.trace) {
      trace::store_write_rec rec{req.out, *off, {}};
      const auto* p = reinterpret_cast<const char*>(req.data.data());
      rec.data.assign(p, p + bytes);
      st_.trace->write(rec);
    }
    if (l == cpu_lane) {
      st_.tensors[req.out] = placed(cpu_lane, *off, bytes, {});
      return {};
    }
    op_desc op;
    op.kind = op_kind::copy;
    op.out = {req.out, operand_ref::no_offset};
    op.a = {0, *off};
    op.count = req.count;
    const uint64_t index = enqueue(l, op);
    st_.tensors[req.out] = placed(l, operand_ref::no_offset, bytes, {});
    free_later(*off, bytes);
    return {false, {l, index}};
  }

  // An explicit move: the source writes the store, the destination reads it once the source
  // acknowledged (the dependency holds the destination's half back).
  placement move(uint32_t dst, op_request& req, uint64_t bytes) {
    const tensor_rec src = st_.tensors.at(req.a);
    op_desc op;
    op.kind = op_kind::copy;
    op.count = req.count;
    if (src.lane == cpu_lane) { // store -> device
      op.out = {req.out, operand_ref::no_offset};
      op.a = {req.a, src.offset};
      const uint64_t index = enqueue(dst, op, {src.writer});
      st_.tensors[req.out] = placed(dst, operand_ref::no_offset, bytes, {});
      return {false, {dst, index}};
    }
    auto off = st_.store->allocate(bytes);
    if (!off)
      return no_space(req.out, bytes, "to(" + req.where.str() + ") -> #" + std::to_string(req.out));
    op.a = {req.a, operand_ref::no_offset};
    op.out = {dst == cpu_lane ? req.out : 0, *off};
    const dependency written{src.lane, enqueue(src.lane, op)};
    if (dst == cpu_lane) { // device -> store: the store range is the cpu tensor
      st_.tensors[req.out] = placed(cpu_lane, *off, bytes, written);
      return {false, written};
    }
    op_desc read; // device -> staging range -> device
    read.kind = op_kind::copy;
    read.count = req.count;
    read.out = {req.out, operand_ref::no_offset};
    read.a = {0, *off};
    const uint64_t index = enqueue(dst, read, {written});
    st_.tensors[req.out] = placed(dst, operand_ref::no_offset, bytes, {});
    free_later(*off, bytes);
    return {false, {dst, index}};
  }

  placement compute(uint32_t l, op_request& req) {
    op_desc op;
    op.kind = req.kind;
    op.count = req.count;
    op.m = req.m;
    op.k = req.k;
    op.n = req.n;
    op.scalar = req.scalar;
    dependency deps[2]; // the writers of a and b (index 0: nothing to wait for)
    for (auto [id, ref, dep] :
         {std::tuple{req.a, &op.a, &deps[0]}, std::tuple{req.b, &op.b, &deps[1]}}) {
      if (id == 0)
        continue;
      const auto& rec = st_.tensors.at(id);
      *ref = {id, rec.offset};
      *dep = rec.writer;
    }
    const uint64_t out_elems = req.kind == op_kind::sum      ? 1
                               : req.kind == op_kind::matmul ? req.m * req.n
                                                             : req.count;
    const uint64_t bytes = out_elems * sizeof(float);
    op.out = {req.out, operand_ref::no_offset};
    if (l == cpu_lane) {
      auto off = st_.store->allocate(bytes);
      if (!off)
        return no_space(req.out, bytes, op_name(req));
      op.out.offset = *off;
    }
    const uint64_t index = enqueue(l, op, {deps[0], deps[1]});
    st_.tensors[req.out] = placed(l, op.out.offset, bytes, {l, index});
    return {false, {l, index}};
  }

  void release(operand_id id) {
    auto it = st_.tensors.find(id);
    if (it == st_.tensors.end())
      return;
    const tensor_rec rec = std::move(it->second);
    st_.tensors.erase(it);
    if (!rec.placed)
      return; // never given memory
    if (rec.lane == cpu_lane) {
      free_later(rec.offset, rec.bytes);
      return;
    }
    auto& ln = st_.lanes[rec.lane];
    if (!ln.failed.empty())
      return; // its runner is gone or runs nothing more
    entry e;
    e.release = true;
    e.released = id;
    ln.queue.push_back(std::move(e));
    ++ln.entries;
  }

  // Lane l runs nothing more. What it holds, and what other lanes were waiting to receive from it,
  // is tainted with `why`; operators on other lanes that waited for it still run, on a stand-in
  // (a NaN fill of the operand), so that every lane's operand map and counts stay whole.
  void fail_lane(uint32_t l, const std::string& why) {
    auto& ln = st_.lanes[l];
    if (!ln.failed.empty())
      return;
    ln.failed = why;
    record(why);
    ln.queue.clear();
    if (ln.remote && !ln.down) // a child runs nothing more for a failed lane: it goes
      self_->send(ln.runner, kill_atom::value);
    for (auto& [id, rec] : st_.tensors) {
      const bool lost = rec.lane == l || (rec.writer.lane == l && rec.writer.index > ln.done);
      if (lost && rec.failure.empty())
        rec.failure = why;
    }
    for (auto& other : st_.lanes) {
      for (auto& e : other.queue) {
        bool waits = false;
        for (const auto& d : e.deps)
          waits = waits || (d.lane == l && d.index > ln.done);
        if (!waits)
          continue;
        e.deps.clear();
        e.op.kind = op_kind::fill;
        e.op.scalar = std::numeric_limits<float>::quiet_NaN();
        e.op.a = {};
        e.op.b = {};
        if (auto it = st_.tensors.find(e.op.out.id); it != st_.tensors.end() && e.op.out.id != 0)
          if (it->second.failure.empty())
            it->second.failure = why;
      }
    }
    if (!ln.ready)
      fail_startup("runner of " + ln.dev.str() + " stopped before it was ready: " + why);
    retire(l);
    dispatch();
    check_queued(); // a failed lane no longer holds the others back
    collect();
  }

  void fail_startup(const std::string& why) {
    if (st_.startup_failure.empty())
      st_.startup_failure = why;
    for (auto& r : st_.ready_waiters)
      r.deliver(make_error(errc::device_failed, st_.startup_failure));
    st_.ready_waiters.clear();
  }

  // Sends every lane what it can run now: a prefix of its queue whose dependencies are met.
  void dispatch() {
    const auto began = st_.timeline ? timeline::clock::now() : timeline::clock::time_point{};
    uint64_t ops = 0, batches = 0;
    wire::execute_msg broadcast;
    for (uint32_t l = 0; l < st_.lanes.size(); ++l) {
      auto& ln = st_.lanes[l];
      if (ln.queue.empty() || ln.down || !ln.failed.empty())
        continue;
      batch b;
      b.lane = l;
      b.ops_before = ln.sent;
      while (!ln.queue.empty()) {
        auto& e = ln.queue.front();
        bool ok = true;
        for (const auto& d : e.deps)
          ok = ok && st_.satisfied(d);
        if (!ok)
          break;
        if (e.release)
          b.no_hold.push_back(e.released);
        else
          b.ops.push_back(e.op);
        ln.queue.pop_front();
      }
      if (b.ops.empty() && b.no_hold.empty())
        continue;
      ln.sent += b.ops.size();
      ln.entries_sent += b.ops.size() + b.no_hold.size();
      ln.in_flight.push_back(ln.entries_sent);
      ++st_.batches;
      st_.operators += b.ops.size();
      ++batches;
      ops += b.ops.size();
      if (ln.remote) {
        broadcast.batches.push_back(std::move(b));
      } else {
        if (st_.trace)
          st_.trace->write(trace::local_rec{b});
        store_fence::release(); // the uploads stored for it
        self_->send(ln.runner, execute_atom::value, std::move(b));
      }
    }
    // One broadcast serves every child (each runs the batch of its own lane).
    if (!broadcast.batches.empty()) {
      const auto now = steady_clock::now();
      for (auto& ln : st_.lanes) // a child that had read everything starts its watch now
        if (ln.remote && ln.broadcasts_received >= st_.broadcast_seq)
          ln.last_progress = now;
      st_.broadcast_bytes += wire_bytes(broadcast);
      st_.broadcasts.push_back({++st_.broadcast_seq, st_.broadcast_bytes});
      self_->send(st_.publisher, publish_atom::value, std::move(broadcast));
      check_queued();
      schedule_progress_check();
    }
    if (st_.timeline && batches > 0)
      st_.timeline->span(::getpid(), 0, "dispatch", "executor", began, timeline::clock::now(),
                         {{"batches", std::to_string(batches), true},
                          {"operators", std::to_string(ops), true}});
  }

  // The operands the user still holds, for the trace's last word on them.
  void record_live() {
    if (!st_.trace)
      return;
    trace::live_rec live;
    for (const auto& [id, rec] : st_.tensors)
      if (rec.placed && rec.failure.empty())
        live.operands.push_back({id, rec.lane, rec.offset, rec.bytes});
    std::sort(live.operands.begin(), live.operands.end(),
              [](const auto& a, const auto& b) { return a.id < b.id; });
    st_.trace->write(live);
  }

  // The PUB socket queues for a child without limit (sndhwm = 0): while one is more than
  // max_queued_bytes behind, the user's threads wait before submitting more. A child that is
  // behind but reading is never failed for it; one that reads nothing is, by the watchdog.
  void check_queued() {
    uint64_t oldest_needed = st_.broadcast_seq;
    std::string over;
    for (uint32_t l = 0; l < st_.lanes.size(); ++l) {
      auto& ln = st_.lanes[l];
      if (!ln.remote || !ln.failed.empty())
        continue;
      const uint64_t behind = behind_bytes(ln);
      if (behind > st_.max_queued_bytes && over.empty())
        over = ln.dev.str() + " is " + std::to_string(behind)
               + " bytes behind in reading its broadcasts (graph_option::max_queued_bytes = "
               + std::to_string(st_.max_queued_bytes) + ")";
      oldest_needed = std::min(oldest_needed, ln.broadcasts_received);
    }
    while (!st_.broadcasts.empty() && st_.broadcasts.front().seq <= oldest_needed) {
      st_.broadcast_base_seq = st_.broadcasts.front().seq;
      st_.broadcast_base_bytes = st_.broadcasts.front().cumulative;
      st_.broadcasts.pop_front();
    }
    if (!st_.flow)
      return;
    if (over.empty())
      st_.flow->resume();
    else
      st_.flow->hold(std::move(over));
  }

  void schedule_progress_check() {
    if (st_.progress_check_scheduled || no_deadline(st_.progress_timeout))
      return;
    st_.progress_check_scheduled = true;
    self_->delayed_send(self_, progress_slice(st_.progress_timeout), progress_atom::value);
  }

  // The watchdog: a child behind in reading its broadcasts that read none and acknowledged nothing
  // for progress_timeout is failed and killed (which drops what the PUB socket queued for it).
  // A child that is slow but reading is left alone, however far behind.
  void check_progress() {
    st_.progress_check_scheduled = false;
    const auto now = steady_clock::now();
    bool watching = false;
    for (uint32_t l = 0; l < st_.lanes.size(); ++l) {
      auto& ln = st_.lanes[l];
      if (!ln.remote || !ln.failed.empty() || ln.down
          || ln.broadcasts_received >= st_.broadcast_seq)
        continue;
      if (now - ln.last_progress < st_.progress_timeout) {
        watching = true;
        continue;
      }
      const uint64_t behind = behind_bytes(ln);
      self_->send(ln.runner, kill_atom::value);
      fail_lane(l, ln.dev.str() + " made no progress for "
                     + duration_string(st_.progress_timeout) + " (it read none of "
                     + std::to_string(st_.broadcast_seq - ln.broadcasts_received)
                     + " broadcasts, " + std::to_string(behind)
                     + " bytes, graph_option::progress_timeout); its child is killed");
    }
    if (watching)
      schedule_progress_check();
  }

  // Any word from a remote lane's child shows that it makes progress.
  void progressed(uint32_t l) { st_.lanes[l].last_progress = steady_clock::now(); }

  // Bytes of the broadcasts after the last one the lane's child read.
  uint64_t behind_bytes(const lane& ln) const {
    const uint64_t r = ln.broadcasts_received;
    if (r >= st_.broadcast_seq)
      return 0;
    const uint64_t read = r <= st_.broadcast_base_seq
                            ? st_.broadcast_base_bytes
                            : st_.broadcasts[r - st_.broadcast_base_seq - 1].cumulative;
    return st_.broadcast_bytes - read;
  }

  // Answers the waits whose work is done, frees the store ranges nobody can read any more, and
  // places the operators that waited for them.
  void collect() {
    bool freed = false;
    for (auto it = st_.frees.begin(); it != st_.frees.end();) {
      if (st_.all_done(it->issued)) {
        st_.store->deallocate(it->offset, it->bytes);
        it = st_.frees.erase(it);
        freed = true;
      } else {
        ++it;
      }
    }
    if (!st_.held.empty() && (freed || st_.frees.empty()))
      drain_held();
    for (auto it = st_.fetches.begin(); it != st_.fetches.end();) {
      if (answer_fetch(it->promise, it->operand))
        it = st_.fetches.erase(it);
      else
        ++it;
    }
    for (auto it = st_.pieces.begin(); it != st_.pieces.end();) {
      const auto& ln = st_.lanes[it->written.lane];
      if (ln.done >= it->written.index) {
        st_.staged[it->offset] = it->bytes;
        store_fence::release();
        it->promise.deliver(it->offset);
      } else if (!ln.failed.empty()) {
        it->promise.deliver(make_error(errc::device_failed, ln.failed));
        free_later(it->offset, it->bytes);
      } else {
        ++it;
        continue;
      }
      it = st_.pieces.erase(it);
    }
    for (auto it = st_.syncs.begin(); it != st_.syncs.end();) {
      if (st_.all_entries_done(it->entries)) {
        if (st_.unreported.empty())
          it->promise.deliver(caf::unit);
        else
          it->promise.deliver(take_unreported());
        it = st_.syncs.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Delivers the operand's store offset, or why it cannot be read; false while it is not written.
  bool answer_fetch(caf::response_promise& rp, operand_id id) {
    auto it = st_.tensors.find(id);
    if (it == st_.tensors.end() || it->second.lane != cpu_lane) {
      rp.deliver(make_error(errc::bad_request,
                            "read: operand #" + std::to_string(id) + " is not a cpu tensor"));
      return true;
    }
    const auto& rec = it->second;
    if (!rec.failure.empty()) {
      rp.deliver(make_error(errc::device_failed, rec.failure));
      return true;
    }
    if (!st_.satisfied(rec.writer))
      return false;
    store_fence::release();
    rp.deliver(rec.offset);
    return true;
  }

  // The lanes a wait is still waiting for, and why, for the error at its deadline.
  std::string silent_lanes(const std::vector<uint64_t>& entries) const {
    std::string out;
    for (std::size_t i = 0; i < st_.lanes.size(); ++i) {
      const auto& ln = st_.lanes[i];
      if (ln.entries_done >= entries[i] || !ln.failed.empty())
        continue;
      out += (out.empty() ? "" : ", ") + ln.dev.str() + " ("
             + std::to_string(ln.entries_sent - ln.entries_done) + " entries sent, "
             + std::to_string(ln.in_flight.size()) + " batches unacknowledged)";
    }
    return out;
  }

  void expire_later(uint64_t wid) {
    if (!no_deadline(st_.wait_timeout))
      self_->delayed_send(self_, st_.wait_timeout, expire_atom::value, wid);
  }

  static caf::error destroyed(const std::string& what) {
    return make_error(errc::device_failed, what + ": the runtime was destroyed while it waited");
  }

  // Shutdown: every thread still waiting on this runtime gets an error rather than a hang.
  void answer_all_waits() {
    for (auto& h : st_.held)
      if (h.what != held_request::kind::submit && h.what != held_request::kind::release)
        if (!h.answered)
          h.promise.deliver(destroyed(h.what == held_request::kind::sync
                                        ? std::string{"sync"}
                                        : "to_vector of tensor #" + std::to_string(h.operand)));
    st_.held.clear();
    st_.held_refs.clear();
    for (auto& f : st_.fetches)
      f.promise.deliver(destroyed("to_vector of tensor #" + std::to_string(f.operand)));
    st_.fetches.clear();
    for (auto& p : st_.pieces)
      p.promise.deliver(destroyed("to_vector"));
    st_.pieces.clear();
    for (auto& w : st_.syncs)
      w.promise.deliver(destroyed("sync"));
    st_.syncs.clear();
  }

  void expire(uint64_t id) {
    if (id == st_.store_wait_id && !st_.held.empty()) { // the held head stops waiting for space
      st_.store_wait_over = true;
      drain_held();
      collect();
      return;
    }
    const auto timeout = duration_string(st_.wait_timeout);
    for (auto& h : st_.held) {
      if (h.wait_id != id || h.answered || h.what == held_request::kind::submit
          || h.what == held_request::kind::release)
        continue;
      h.answered = true;
      const auto& head = st_.held.front();
      const std::string what = h.what == held_request::kind::sync
                                 ? std::string{"sync"}
                                 : "to_vector of tensor #" + std::to_string(h.operand);
      h.promise.deliver(make_error(
        errc::timeout, what + ": waited " + timeout + " behind "
                         + (head.what == held_request::kind::submit ? op_name(head.req)
                                                                    : std::string{"a read"})
                         + ", which waits for room in the store ("
                         + std::to_string(st_.store->live_bytes()) + " of "
                         + std::to_string(st_.store->capacity())
                         + " bytes are held, graph_option::store_bytes)"));
      return;
    }
    for (auto it = st_.syncs.begin(); it != st_.syncs.end(); ++it) {
      if (it->id != id)
        continue;
      it->promise.deliver(make_error(errc::timeout, "sync: no acknowledgement within " + timeout
                                                      + " from " + silent_lanes(it->entries)));
      st_.syncs.erase(it);
      return;
    }
    for (auto it = st_.pieces.begin(); it != st_.pieces.end(); ++it) {
      if (it->id != id)
        continue;
      it->promise.deliver(make_error(
        errc::timeout, "to_vector: a piece of tensor #" + std::to_string(it->operand)
                         + " not copied within " + timeout + ": "
                         + st_.lanes[it->written.lane].dev.str() + " has not acknowledged it"));
      free_later(it->offset, it->bytes); // its copy may still run
      st_.pieces.erase(it);
      return;
    }
    for (auto it = st_.fetches.begin(); it != st_.fetches.end(); ++it) {
      if (it->id != id)
        continue;
      const auto& rec = st_.tensors.at(it->operand);
      it->promise.deliver(make_error(
        errc::timeout, "to_vector: tensor #" + std::to_string(it->operand) + " not written within "
                         + timeout + ": " + st_.lanes[rec.writer.lane].dev.str()
                         + " has not acknowledged it"));
      st_.fetches.erase(it);
      return;
    }
  }

  // Every lane first; then the sockets' actors, which the children's last words pass through.
  void maybe_finish_shutdown() {
    if (!st_.stopping)
      return;
    for (const auto& l : st_.lanes)
      if (!l.down)
        return;
    if (st_.publisher && !st_.publisher_down) {
      self_->send_exit(st_.publisher, caf::exit_reason::user_shutdown);
      self_->send_exit(st_.puller, caf::exit_reason::user_shutdown);
      return;
    }
    if (st_.puller && !st_.puller_down)
      return;
    st_.shutdown_waiter.deliver(st_.shutdown_problems);
    self_->quit();
  }

  void on_down(const caf::down_msg& dm) {
    for (auto* service : {&st_.publisher, &st_.puller}) {
      if (*service && service->address() == dm.source) {
        const bool pub = service == &st_.publisher;
        (pub ? st_.publisher_down : st_.puller_down) = true;
        if (!st_.stopping) {
          const std::string why = std::string{pub ? "publisher" : "puller"} + " stopped: "
                                  + (dm.reason ? describe(dm.reason, "socket") : "exited");
          for (uint32_t l = 0; l < st_.lanes.size(); ++l)
            if (st_.lanes[l].remote)
              fail_lane(l, why);
        }
      }
    }
    for (uint32_t l = 0; l < st_.lanes.size(); ++l) {
      auto& ln = st_.lanes[l];
      if (ln.runner.address() != dm.source || ln.down)
        continue;
      ln.down = true;
      collect(); // what its child could still write is free now
      if (!st_.stopping)
        fail_lane(l, "runner of " + ln.dev.str() + " stopped: "
                       + (dm.reason ? describe(dm.reason, ln.dev.str()) : "exited"));
      else if (ln.failed.empty() && dm.reason && dm.reason.category() == error_category
               && dm.reason.code() != static_cast<uint8_t>(errc::runner_exited))
        // a healthy lane's child that exited with a code, or had to be killed (one killed for a
        // failure was reported then)
        st_.shutdown_problems += (st_.shutdown_problems.empty() ? "" : "; ")
                                 + describe(dm.reason, ln.dev.str());
    }
    maybe_finish_shutdown();
  }

private:
  executor_actor* self_;
  executor_state& st_;
};

// The tag of the start-up deadline message the executor sends itself.
struct start_deadline_t {};
constexpr start_deadline_t start_deadline{};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, start_deadline_t&) {
  return f(caf::meta::type_name("start_deadline"));
}

caf::behavior executor_fun(executor_actor* self, executor_setup setup) {
  auto& st = self->state;
  const auto start_timeout = setup.start_timeout;
  st.store_base = setup.store_base;
  st.store = std::make_unique<store_allocator>(setup.store_size);
  st.wait_timeout = setup.wait_timeout;
  st.max_queued_bytes = setup.max_queued_bytes;
  st.progress_timeout = setup.progress_timeout;
  st.flow = setup.flow;
  st.trace = setup.trace;
  st.timeline = setup.timeline;
  auto& sys = self->home_system();
  const auto me = caf::actor_cast<caf::actor>(self);
  auto devices = setup.devices;
  devices.insert(devices.begin(), device::cpu());
  // The first record: the publisher records its first Hello as soon as it is spawned.
  if (st.trace)
    st.trace->write(trace::begin_rec{wire::version, setup.process.has_value(), devices,
                                     setup.store_size});
  if (setup.process) {
    auto& p = *setup.process;
    st.publisher = spawn_publisher(sys, p.zmq, p.pub_endpoint, st.trace);
    st.puller = spawn_puller(sys, p.zmq, p.pull_endpoint, me);
    self->monitor(st.publisher);
    self->monitor(st.puller);
  }
  if (st.timeline) {
    st.timeline->name_process(::getpid(), "controller");
    st.timeline->name_track(::getpid(), 0, "executor");
  }
  for (uint32_t i = 0; i < devices.size(); ++i) {
    lane l;
    l.dev = devices[i];
    l.remote = setup.process && !devices[i].is_cpu();
    if (l.remote) {
      auto& p = *setup.process;
      auto ps = make_proxy_setup(p, i, devices[i], setup.store_size, setup.start_timeout,
                                 stop_timeout(setup.wait_timeout));
      if (st.timeline)
        ps.args.timeline_part = timeline_part(p, i);
      if (st.trace)
        st.trace->write(trace::startup_rec{i, ps.args});
      l.runner = spawn_runner_proxy(sys, std::move(ps));
    } else {
      l.runner = spawn_stream_actor(sys, me, i, devices[i], setup.store_base, setup.store_size,
                                    devices[i].type == device::kind::cuda, st.timeline);
    }
    self->monitor(l.runner);
    st.lanes.push_back(std::move(l));
  }
  self->set_down_handler([self](caf::down_msg& dm) { executor_logic{self}.on_down(dm); });
  if (!no_deadline(setup.start_timeout))
    self->delayed_send(self, setup.start_timeout, wait_ready_atom::value, start_deadline);
  // Runners never outlive the executor, whichever way it ends.
  std::vector<caf::actor> runners;
  for (auto& l : st.lanes)
    runners.push_back(l.runner);
  if (st.publisher) {
    runners.push_back(st.publisher);
    runners.push_back(st.puller);
  }
  self->attach_functor([runners](const caf::error&) {
    for (auto& r : runners)
      caf::anon_send_exit(r, caf::exit_reason::user_shutdown);
  });
  auto lane_ok = [self](uint32_t l) { return l < self->state.lanes.size(); };
  return {
    [=](submit_atom, op_request& req) {
      executor_logic x{self};
      x.on_submit(req);
      x.schedule_flush();
    },
    [=](release_atom, operand_id id) {
      store_fence::acquire(); // a user's thread's last reads of the range
      executor_logic x{self};
      x.on_release(id);
      x.schedule_flush();
    },
    [=](progress_atom) { executor_logic{self}.check_progress(); },

    [=](flush_atom) {
      self->state.flush_scheduled = false;
      executor_logic x{self};
      x.dispatch();
      x.collect(); // releases of cpu tensors free their ranges once nothing reads them
    },
    [=](ready_atom, uint32_t l) {
      auto& st = self->state;
      if (!lane_ok(l))
        return;
      st.record_ack(l, wire::msg_type::ready, wire::ready_msg{l, st.lanes[l].dev, 0});
      st.lanes[l].ready = true;
      executor_logic{self}.progressed(l);
      if (st.all_ready() && st.startup_failure.empty()) {
        if (st.publisher)
          self->send(st.publisher, ready_atom::value); // no more Hellos
        for (auto& r : st.ready_waiters)
          r.deliver(caf::unit);
        st.ready_waiters.clear();
      }
    },
    [=](done_atom, uint32_t l, uint64_t done, uint64_t live) {
      store_fence::acquire(); // what the runner did with its store ranges, before they are reused
      auto& st = self->state;
      if (!lane_ok(l))
        return;
      st.record_ack(l, wire::msg_type::done, wire::done_msg{l, done, live});
      auto& ln = st.lanes[l];
      ln.done = done;
      ln.device_live_bytes = live;
      if (!ln.in_flight.empty()) {
        ln.entries_done = ln.in_flight.front();
        ln.in_flight.pop_front();
      }
      executor_logic x{self};
      x.progressed(l);
      x.retire(l);
      x.dispatch();
      x.collect();
    },
    [=](failed_atom, uint32_t l, uint64_t index, std::string& what) {
      store_fence::acquire();
      executor_logic x{self};
      if (lane_ok(l)) {
        self->state.record_ack(l, wire::msg_type::failed, wire::failed_msg{l, index, what});
        const auto dev = self->state.lanes[l].dev.str();
        x.fail_lane(l, what.find(dev) == std::string::npos ? dev + ": " + what : what);
      } else { // not attributable to one lane (a malformed frame): every child is suspect
        for (uint32_t i = 0; i < self->state.lanes.size(); ++i)
          if (self->state.lanes[i].remote)
            x.fail_lane(i, what);
      }
    },
    [=](received_atom, uint32_t l, uint64_t count) {
      if (!lane_ok(l))
        return;
      auto& st = self->state;
      st.record_ack(l, wire::msg_type::received, wire::received_msg{l, count});
      if (count > st.lanes[l].broadcasts_received) {
        st.lanes[l].broadcasts_received = count;
        executor_logic x{self};
        x.progressed(l);
        x.check_queued();
      }
    },
    [=](fetch_atom, operand_id id) -> caf::result<uint64_t> {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      executor_logic x{self};
      if (st.stopping) {
        rp.deliver(x.destroyed("to_vector of tensor #" + std::to_string(id)));
      } else if (!st.held.empty()) {
        const uint64_t wid = st.next_wait_id++;
        x.hold_wait(held_request::kind::fetch, rp, id, wid);
        x.expire_later(wid);
      } else if (!x.answer_fetch(rp, id)) {
        const uint64_t wid = st.next_wait_id++;
        st.fetches.push_back({wid, rp, id});
        x.expire_later(wid);
      }
      return caf::delegated<uint64_t>{};
    },
    [=](fetch_atom, operand_id id, uint64_t first, uint64_t count) -> caf::result<uint64_t> {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      executor_logic x{self};
      if (st.stopping)
        rp.deliver(x.destroyed("to_vector"));
      else
        x.on_piece(rp, id, first, count, st.next_wait_id++);
      return caf::delegated<uint64_t>{};
    },
    [=](unstage_atom, uint64_t offset, uint64_t bytes) {
      store_fence::acquire();
      executor_logic{self}.unstage(offset, bytes);
    },
    [=](sync_atom) -> caf::result<caf::unit_t> {
      auto& st = self->state;
      auto rp = self->make_response_promise();
      executor_logic x{self};
      const uint64_t wid = st.next_wait_id++;
      if (st.stopping) {
        rp.deliver(x.destroyed("sync"));
      } else if (!st.held.empty()) {
        x.hold_wait(held_request::kind::sync, rp, 0, wid);
        x.expire_later(wid);
      } else {
        st.syncs.push_back({wid, rp, st.entries_now()});
        x.collect();
        if (!st.syncs.empty() && st.syncs.back().id == wid)
          x.expire_later(wid);
      }
      return caf::delegated<caf::unit_t>{};
    },
    [=](expire_atom, uint64_t wid) { executor_logic{self}.expire(wid); },
    [=](wait_ready_atom, start_deadline_t) {
      auto& st = self->state;
      std::string missing;
      for (const auto& l : st.lanes)
        if (!l.ready)
          missing += (missing.empty() ? "" : ", ") + l.dev.str();
      if (!missing.empty())
        executor_logic{self}.fail_startup("start-up: no devicesReady from " + missing + " within "
                                          + duration_string(start_timeout));
    },
    [=](wait_ready_atom) -> caf::result<caf::unit_t> {
      auto& st = self->state;
      if (!st.startup_failure.empty())
        return make_error(errc::device_failed, st.startup_failure);
      if (st.all_ready())
        return caf::unit;
      st.ready_waiters.push_back(self->make_response_promise());
      return caf::delegated<caf::unit_t>{};
    },
    [=](stats_atom) {
      auto& st = self->state;
      uint64_t device_live = 0;
      for (auto& l : st.lanes)
        device_live += l.device_live_bytes;
      return caf::make_message(static_cast<uint64_t>(st.store->live_bytes()), device_live,
                               st.batches, st.operators);
    },
    [=](shutdown_atom) -> caf::result<std::string> {
      auto& st = self->state;
      st.stopping = true;
      st.shutdown_waiter = self->make_response_promise();
      executor_logic{self}.record_live();
      executor_logic{self}.answer_all_waits();
      if (st.publisher)
        self->send(st.publisher, destroy_atom::value);
      for (auto& l : st.lanes) {
        if (l.remote) // sets the exit flag, waits for the child (deadline, then SIGKILL)
          self->send(l.runner, shutdown_atom::value);
        else
          self->send_exit(l.runner, caf::exit_reason::user_shutdown);
      }
      executor_logic{self}.maybe_finish_shutdown();
      return caf::delegated<std::string>{};
    },
  };
}

} // namespace

caf::actor spawn_executor(caf::actor_system& sys, executor_setup setup) {
  return sys.spawn<caf::detached>(executor_fun, std::move(setup));
}

} // namespace ag
