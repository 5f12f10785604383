// planner: what the executor (actors/executor.hpp) decides, without actors: where each operand
// lives (device memory by id, or a range of the host store it allocates), which lane runs each
// operator and after which operators of other lanes, when a store range is free again, how a
// lane's failure spreads to the operands that depend on it (and only to those), how far each
// child is behind in reading its broadcasts, and when each wait (sync, a read, start-up) is
// answered or expires. The executor feeds it messages and carries out what it asks through a
// planner_outbox; tests drive it directly.
//
// Its parts: planner.cpp (requests, acknowledgements, dispatch), planner_place.cpp (placement and
// store allocation), planner_failure.cpp (start-up and failure spreading), planner_waits.cpp
// (held requests, waits, deadlines), planner_watch.cpp (the broadcast window and the watchdog).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actorgraph/device.hpp"
#include "actors/broadcast_window.hpp"
#include "actors/errc.hpp"
#include "actors/plan_records.hpp"
#include "graph/op.hpp"
#include "ipc/store_allocator.hpp"

namespace ag {

class completion_board;
class flow_control;
class timeline;

namespace trace {
class writer;
} // namespace trace

namespace wire {
struct execute_msg;
enum class msg_type : uint8_t;
} // namespace wire

// What a wait is answered with: success (a store offset for a read, nothing for a sync or
// start-up), or an error of kind `code` saying what.
struct wait_answer {
  std::optional<errc> code; // empty: success
  std::string what;
  uint64_t offset = 0;

  static wait_answer ok(uint64_t offset = 0) { return {std::nullopt, {}, offset}; }
  static wait_answer fail(errc code, std::string what) { return {code, std::move(what), 0}; }
  // A wait the runtime's end cut short; what: which wait it was.
  static wait_answer destroyed(const std::string& what) {
    return fail(errc::device_failed, what + ": the runtime was destroyed while it waited");
  }
};

// What the planner asks of whoever drives it (the executor actor; a test).
class planner_outbox {
public:
  virtual ~planner_outbox() = default;
  // Run a batch on a lane of this process.
  virtual void run(uint32_t lane, batch b) = 0;
  // Broadcast to every child (each runs its own lane's batch).
  virtual void broadcast(wire::execute_msg m) = 0;
  // Kill the child of a remote lane.
  virtual void kill(uint32_t lane) = 0;
  // Answer a wait (each is answered once).
  virtual void answer(uint64_t wait, wait_answer a) = 0;
  // Call flush() once the messages queued now are handled (the end of a mailbox drain).
  virtual void flush_soon() = 0;
  // Call expire(wait) after `after`.
  virtual void expire_after(uint64_t wait, std::chrono::milliseconds after) = 0;
  // Call check_progress() after `after`.
  virtual void check_progress_after(std::chrono::milliseconds after) = 0;
  // Start a new child for remote lane l, whose child is gone: its `generation`-th, going on from
  // `entries_before` acknowledged entries (wire::startup_args). Call restart_deadline(l,
  // generation) once start_timeout has passed.
  virtual void restart(uint32_t lane, uint32_t generation, uint64_t entries_before) = 0;
};

struct planner_setup {
  std::vector<device> devices; // lane 0 is the cpu; lanes 1.. the devices
  bool process = false;        // the device lanes run in child processes
  std::byte* store_base = nullptr;
  std::size_t store_size = 0;
  // Process mode: reserves the shared store's pages in /dev/shm as ranges are first handed out.
  store_allocator::reserve_fn reserve_store;
  // The store's allocator, shared with the user's threads that write uploads into ranges of their
  // own (runtime_core::stage); null: the planner makes one of store_size and reserve_store.
  std::shared_ptr<store_allocator> store;
  // The deadline of every sync, read and wait for store space.
  std::chrono::milliseconds wait_timeout{60000};
  // Process mode: while a child is this far behind in reading broadcasts, the user's threads wait.
  std::size_t max_queued_bytes = std::size_t{256} << 20;
  // Process mode: a child behind in reading that reads none for this long is failed and killed.
  // milliseconds::max(): never.
  std::chrono::milliseconds progress_timeout{10000};
  // The credits the user's threads took; null: nothing is bounded.
  std::shared_ptr<flow_control> flow;
  // Records what the runners are sent and answer; null: nothing is recorded.
  std::shared_ptr<trace::writer> trace;
  // Spans of the dispatches; null: none.
  std::shared_ptr<ag::timeline> timeline;
  // The board the acknowledgements are published on (by the runners on the shared-memory path, by
  // the puller for children on the sockets), where the planner counts every failure it learns of
  // (a fault) and stops; null: none, and no tickets.
  completion_board* board = nullptr;
  // Whether the runners of this machine see the board themselves (the shared-memory path), so
  // that one lane's runner can wait there for another's (await operators).
  bool runners_see_board = false;
  // The largest broadcast body (the ring's largest frame); 0: no bound (the socket).
  std::size_t max_broadcast_bytes = 0;
  // Lane pairs with a direct path (device lanes of this process that are peers: peer_copy and
  // peer_sum read one's memory on the other): peers[a][b]. Empty: none; everything between
  // devices goes through the store.
  std::vector<std::vector<bool>> peers;
  // A direct all_reduce of at most this many bytes per part reads every peer's whole part on every
  // lane (one-shot); a larger one sums one block per lane, then gathers the blocks (two-shot).
  std::size_t one_shot_bytes = std::size_t{256} << 10;
  // Process mode: how many times each device's child is started again after it died or was
  // failed (graph_option::max_restarts); 0: a failed device stays failed.
  uint32_t max_restarts = 0;
};

struct plan_stats {
  uint64_t store_live = 0;
  uint64_t device_live = 0;
  uint64_t batches = 0;
  uint64_t operators = 0;
  uint64_t restarts = 0; // children started again, over every device
};

class planner {
public:
  // How far ahead of the acknowledgements of the lane it waits for an await is sent (operators):
  // four times what a runner runs before it confirms by itself, so that lanes run on while
  // acknowledgements come, and so little that a lane that stops holds back little sent work.
  static constexpr uint64_t await_window = 16384;

  planner(planner_setup setup, planner_outbox& out);

  // -- from the user's threads --------------------------------------------------------------------
  uint64_t new_wait() noexcept { return next_wait_++; }
  void submit(op_request& req);
  void submit(collective_request& req);
  void release(operand_id id);
  void fetch(uint64_t wait, operand_id id);                                   // a cpu tensor
  // A device tensor of a lane in this process shared in place (tensor::device_bytes): answered
  // with the store offset of its export (graph/export_slot.hpp) once that is written.
  void share(uint64_t wait, operand_id id);
  void fetch_piece(uint64_t wait, operand_id id, uint64_t first, uint64_t count); // staged
  void unstage(uint64_t offset, uint64_t bytes);
  void sync(uint64_t wait);
  void wait_ready(uint64_t wait);
  // Ends a step (runtime::mark_step): what was submitted since the last mark goes to each lane as
  // one batch (more when some of it waits for another lane, or for room in a broadcast), tagged
  // with the step's number. From the first mark on, operators wait for the mark that ends their
  // step, unless something waits for them first (a sync, a read, a ticket, a request held for
  // store space, a step of more than max_step_entries on a lane): then that step goes out now,
  // untagged (planner_steps.cpp).
  void mark_step();
  // A user's thread is about to wait on the board (a ticket): the open step goes out now.
  void break_step();
  uint64_t steps() const noexcept { return steps_; }
  // A read of a cpu tensor, or a sync, that the user's thread may wait for on the board itself
  // (actors/plan_records.hpp); not valid when only the planner can answer it now (no board, a
  // failure not yet reported, a held request, a tainted tensor, stopping).
  wait_ticket read_ticket(operand_id id) const;
  wait_ticket sync_ticket() const;
  // True when it has heard every acknowledgement the board shows (of lanes still healthy).
  bool heard_board() const;
  // True when a healthy lane has operators sent and not acknowledged.
  bool in_flight() const;
  // True when the runners publish on the board themselves (the shared-memory path).
  bool runners_see_board() const noexcept { return board_ != nullptr && runners_see_board_; }
  // True when what the next flush would send is releases alone: nothing waits for them but a
  // sync, so a driver may let them ride with the next operators.
  bool releases_alone() const;

  // -- from the runners ---------------------------------------------------------------------------
  // True when this made every lane ready (start-up is over).
  bool ready(uint32_t lane);
  // entries: the lane's operators and releases acknowledged, as its runner counts them (traced).
  void done(uint32_t lane, uint64_t ops_done, uint64_t device_live, uint64_t entries = 0);
  // lane no_lane (or out of range): every remote lane is suspect.
  void failed(uint32_t lane, uint64_t index, const std::string& what);
  void received(uint32_t lane, uint64_t count);
  // The shared-memory path: the first `count` broadcasts are where the children can read them (the
  // rest wait for room on the ring). A child that has read all of these is not behind: the watchdog
  // watches only a child that has something to read. Never called: every broadcast is there as
  // soon as it is sent (each child's socket queues its own).
  void delivered(uint64_t count);
  // The lane's runner is gone. why: the failure, when it went while not stopping.
  void lane_down(uint32_t lane, const std::string& why);
  // Every remote lane fails with why (a socket's actor stopped).
  void fail_remote(const std::string& why);
  // The restart of lane l as its `generation`-th child had start_timeout to make it ready: if it
  // is not, the lane fails (and may be started again).
  void restart_deadline(uint32_t lane, uint32_t generation,
                        std::chrono::milliseconds start_timeout);

  // -- from the driver's timers -------------------------------------------------------------------
  void flush();
  void expire(uint64_t wait);
  void check_progress();
  void start_deadline(std::chrono::milliseconds start_timeout);

  // -- shutdown -----------------------------------------------------------------------------------
  // Records what the user still holds and answers every wait with an error; later waits too.
  void stop();
  bool stopping() const noexcept { return stopping_; }

  // -- what it holds ------------------------------------------------------------------------------
  plan_stats stats() const;
  const plan_lane& lane(uint32_t l) const { return lanes_.at(l); }
  const tensor_rec* tensor(operand_id id) const;
  std::size_t held() const noexcept { return held_.size(); }
  std::size_t pending_frees() const noexcept { return frees_.size(); }
  const store_allocator& store() const noexcept { return store_; }

private:
  // planner.cpp
  void schedule_flush();
  uint64_t enqueue(uint32_t l, const op_desc& op, std::initializer_list<dependency> deps = {});
  bool board_orders(uint32_t from, uint32_t to) const;
  void settle_awaits();
  void settle(const op_request& req, std::optional<uint32_t> l, dependency retire);
  void retire(uint32_t l);
  void dispatch();
  bool sendable() const;
  bool ready(const entry& e) const;
  bool dispatch_lane(uint32_t l, wire::execute_msg& broadcast, std::size_t& budget);
  void record_live();
  std::optional<uint32_t> lane_of(const device& d) const;
  std::string op_name(const op_request& req) const;
  bool satisfied(const dependency& d) const;
  bool all_done(const std::vector<uint64_t>& issued) const;
  bool all_entries_done(const std::vector<uint64_t>& entries) const;
  std::vector<uint64_t> entries_now() const;
  std::vector<uint64_t> issued_now() const;
  bool all_ready() const;
  template <class Msg>
  void record_ack(uint32_t lane, wire::msg_type type, Msg msg);

  // planner_place.cpp
  bool try_submit(op_request& req);
  placement place(uint32_t l, op_request& req);
  placement upload(uint32_t l, op_request& req, uint64_t bytes);
  placement move(uint32_t dst, op_request& req, uint64_t bytes);
  placement direct_move(uint32_t dst, op_request& req, uint64_t bytes);
  placement compute(uint32_t l, op_request& req);
  void store_upload(operand_id out, uint64_t offset, const char* data, uint64_t bytes);
  bool piecewise(const op_request& req) const;
  uint64_t piece_elems(dtype t) const;
  bool stream_pieces(held_request& h);
  std::optional<dependency> stream_piece(held_request& h, uint32_t dst);
  bool try_piece(held_request& h);
  void drop(operand_id id);
  placement no_space(operand_id out, uint64_t bytes, const std::string& what);
  bool may_wait_for_space(uint64_t bytes) const;
  std::string store_full(uint64_t bytes, const std::string& what) const;
  void free_later(uint64_t offset, uint64_t bytes);

  // planner_collective.cpp
  bool stream_collective(held_request& h);
  std::string collective_blocker(const collective_request& c) const;
  void fail_results(const collective_request& c, const std::string& why);
  std::string failed_participant(const collective_request& c) const;
  bool place_results(const collective_request& c);
  bool place_chunk(const collective_request& c, uint64_t at, uint64_t n);
  bool direct_group(const collective_request& c) const;
  bool place_direct(const collective_request& c);
  void gather_blocks(const collective_request& c, const std::vector<operand_id>& blocks,
                     const std::vector<uint32_t>& block_lanes);
  std::optional<uint64_t> write_group(const collective_request& c);
  uint64_t read_directly(uint32_t l, op_desc op, const std::vector<operand_id>& sources);
  void lose_rest(const collective_request& c, uint64_t at, const std::string& why);
  void settle_collective(const collective_request& c);
  uint64_t chunk_elems(std::size_t parts) const;
  void note_path(const std::string& what, const std::vector<device>& devices, bool direct);
  std::string no_direct_path(const std::vector<device>& devices) const;
  bool peer(uint32_t a, uint32_t b) const;
  void add_reader(tensor_rec& rec, dependency reader);
  bool reads_export(uint32_t reader, const tensor_rec& rec) const;
  bool export_all(const std::vector<operand_id>& ids, std::size_t extra,
                  std::vector<uint64_t>& extra_slots);
  void export_operand(operand_id id, uint64_t slot);
  dependency source_dep(uint32_t reader, const tensor_rec& rec) const;
  void note_direct_read(dependency reader, const tensor_rec& source, operand_id out);

  // planner_failure.cpp
  void record(const std::string& what);
  wait_answer take_unreported();
  void taint(operand_id out, std::string why);
  std::string blocker(const op_request& req, std::optional<uint32_t> l) const;
  void fail_lane(uint32_t l, const std::string& why);
  void mark_exports_gone(std::optional<uint32_t> l);
  void stand_in_for(uint32_t l, const std::string& why);
  void taint_readers(std::unordered_map<uint64_t, std::string> staged = {});
  void empty_awaits_of_stand_ins();
  void fail_startup(const std::string& why);

  // planner_restart.cpp
  void maybe_restart(uint32_t l);
  void relabel_lost(uint32_t l);

  // planner_waits.cpp
  void hold(op_request&& req);
  void unhold(const op_request& req);
  void hold_wait(held_request::kind what, uint64_t wait, operand_id id);
  void start_store_wait();
  void drain_held(bool fresh = false);
  bool drain_head(held_request& h, bool moved);
  void collect();
  void free_collected(bool& freed);
  void collect_pieces();
  bool answer_fetch(uint64_t wait, operand_id id);
  bool answer_share(uint64_t wait, operand_id id);
  // A read or a share: answered now, once the requests held before it are placed, or once what
  // it waits for ran.
  void await_operand(const pending_fetch& f);
  bool answer(const pending_fetch& f) {
    return f.shared ? answer_share(f.wait, f.operand) : answer_fetch(f.wait, f.operand);
  }
  void expire_later(uint64_t wait);
  void answer_all_waits();
  bool expire_held(uint64_t wait);
  bool expire_pending(uint64_t wait);
  std::string silent_lanes(const std::vector<uint64_t>& entries) const;

  // planner_steps.cpp
  std::pair<uint64_t, uint64_t> step_room(const plan_lane& ln) const;
  void check_open_step();

  // planner_watch.cpp
  void sent_broadcast(wire::execute_msg&& m);
  void check_queued();
  void schedule_progress_check();
  void progressed(uint32_t l);
  bool waits_for_export(uint32_t l) const;
  uint64_t readable_broadcasts() const noexcept;

  planner_outbox& out_;
  std::vector<plan_lane> lanes_;
  std::byte* store_base_;
  std::shared_ptr<store_allocator> store_owner_;
  store_allocator& store_; // *store_owner_
  std::unordered_map<operand_id, tensor_rec> tensors_;
  // In the order they were released: each one's `issued` is at least its predecessor's on every
  // lane, so those that can be freed are always a prefix (freed from the front, O(1) each).
  std::deque<pending_free> frees_;
  std::vector<pending_fetch> fetches_;
  std::vector<pending_piece> pieces_;
  std::unordered_map<uint64_t, uint64_t> staged_; // pieces handed to a user's thread: offset, bytes
  std::vector<pending_sync> syncs_;
  uint64_t next_wait_ = 1;
  std::chrono::milliseconds wait_timeout_;
  std::vector<uint64_t> ready_waits_;
  std::string startup_failure_;
  broadcast_window window_;
  std::size_t max_queued_bytes_;
  std::size_t max_broadcast_bytes_;
  completion_board* board_;
  bool runners_see_board_;
  std::chrono::milliseconds progress_timeout_;
  bool progress_check_scheduled_ = false;
  bool tracks_delivery_ = false; // delivered() is called: not every broadcast sent is readable
  uint64_t delivered_ = 0;
  std::shared_ptr<flow_control> flow_;
  std::deque<held_request> held_;
  std::unordered_map<operand_id, uint32_t> held_refs_; // operands the held operators name
  uint64_t store_wait_ = 0;       // the deadline of the held head's wait for store space
  bool store_wait_over_ = false;  // that deadline passed: the head fails instead of waiting
  bool flush_scheduled_ = false;
  bool stopping_ = false;
  // Failures not yet reported by a sync(): the first, and how many more.
  std::string unreported_;
  uint64_t unreported_more_ = 0;
  uint64_t batches_ = 0;
  uint64_t operators_ = 0;
  // Steps: marks seen (the last step's number); whether any was (operators wait for marks from
  // then on); whether the open step went out before its mark; the most entries it may hold on a
  // lane before it goes (half a lane's credits, so that its submitter never waits for it).
  uint64_t steps_ = 0;
  bool stepping_ = false;
  bool step_broken_ = false;
  uint64_t max_step_entries_ = 4096;
  std::shared_ptr<trace::writer> trace_;
  std::shared_ptr<ag::timeline> timeline_;
  std::vector<std::vector<bool>> peers_;
  std::size_t one_shot_bytes_;
  operand_id next_own_id_ = operand_id{1} << 62; // the planner's own operands (two-shot blocks)
  std::vector<direct_read> direct_reads_; // of children's operands, not yet known to have run
  std::size_t direct_reads_sweep_at_ = 64;  // when note_direct_read next forgets those that ran
  uint32_t max_restarts_ = 0;
  uint64_t restarts_ = 0;
};

} // namespace ag
