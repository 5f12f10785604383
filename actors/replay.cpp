#include "actors/replay.hpp"

#include <algorithm>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/lane_topology.hpp"
#include "actors/plan_records.hpp"
#include "actors/node_setup.hpp"
#include "actors/process_env.hpp"
#include "actors/protocol.hpp"
#include "actors/trace_needs.hpp"
#include "graph/deadline.hpp"
#include "graph/export_slot.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/tensor_store.hpp"
#include "ipc/trace.hpp"
#include "ipc/wire.hpp"

namespace ag {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr uint64_t scratch_align = 64;

uint64_t round_up(uint64_t x) { return (x + scratch_align - 1) / scratch_align * scratch_align; }

// A runner's answer to a batch.
struct answer {
  bool failed = false;
  uint64_t index = 0; // done: operators done; failed: the operator that failed
  uint64_t live = 0;  // done: device bytes live
  std::string what;   // failed
};

// A batch as it was sent, to name where a divergence is.
struct sent_batch {
  uint64_t first = 0; // operator indices first..last of the lane (last < first: none)
  uint64_t last = 0;
  std::string where;  // "message #12 (record 40)"
  std::vector<op_desc> ops;
};

// What the replay knows of a lane besides its actors (lane_topology).
struct replay_lane {
  device dev;
  bool ready = false;
  std::string down; // why its runner stopped; empty while it runs
  std::deque<answer> answers;
  std::vector<sent_batch> sent;
  uint64_t ops_after = 0;
  uint64_t heard = 0;         // operators its answers so far say are done
  bool heard_failure = false; // one of its answers is a failure
};

class divergence : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class replayer {
public:
  replayer(caf::actor_system& sys, const trace::file& t, const replay_options& opt)
    : sys_(sys), t_(t), opt_(opt), self_(sys) {
    const auto& recorded = t.begin.lanes;
    std::vector<device> devices = recorded;
    if (!opt.devices.empty()) {
      if (opt.devices.size() != recorded.size() - 1) {
        std::string names;
        for (std::size_t i = 1; i < recorded.size(); ++i)
          names += (i > 1 ? "," : "") + recorded[i].str();
        throw error("the trace has " + std::to_string(recorded.size() - 1) + " device lanes ("
                    + names + "); --devices names " + std::to_string(opt.devices.size()));
      }
      for (const auto& d : opt.devices)
        if (d.is_cpu())
          throw error("--devices: cpu is lane 0 already; name the device lanes only");
      std::copy(opt.devices.begin(), opt.devices.end(), devices.begin() + 1);
    }
    // The operands held at the end are copied behind the recorded store to be digested.
    // The reader bounds the store and each live operand by trace::max_store_bytes, and the sum is
    // checked as it grows, so none of this wraps.
    scratch_base_ = round_up(t.begin.store_bytes);
    uint64_t store_bytes = scratch_base_;
    for (const auto& r : t.records)
      if (auto* live = std::get_if<trace::live_rec>(&r.body))
        for (const auto& o : live->operands)
          if (o.lane != cpu_lane && (store_bytes += round_up(o.bytes)) > trace::max_store_bytes)
            throw error("the trace's store and live device operands need more than "
                        + std::to_string(trace::max_store_bytes) + " bytes");
    peers_ = has_direct_transfers(t);
    if (peers_ && opt.process)
      throw error("the trace has direct transfers between device lanes of one process (recorded "
                  "in thread mode with peers): replay it in-process (--mode=inproc)");
    if (!opt.process && has_exports(t))
      throw error("the trace has direct transfers between child processes (CUDA IPC exports): "
                  "replay it in process mode (--mode=process)");
    if (opt.process) {
      env_.emplace(store_bytes, devices.size() - 1, opt.runner_path,
                   opt.nodes ? 0 : ring_bytes_for(t, opt), graph_option{}.spin_wait, opt.timeout);
      if (opt.nodes)
        opt.nodes->open(*env_, opt.trust_file, graph_option{}.node_streams);
      store_base_ = env_->store().base();
    } else {
      local_store_ = tensor_store::anonymous(store_bytes);
      store_base_ = local_store_.base();
      local_board_ = std::make_unique<local_board>(static_cast<uint32_t>(devices.size()));
    }
    store_bytes_ = store_bytes;
    try {
      start(devices);
    } catch (...) {
      stop(); // the runners that did start, before the store and directory go
      throw;
    }
  }

  ~replayer() { stop(); }

  replay_report run() {
    try {
      for (std::size_t i = 1; i < t_.records.size(); ++i)
        step(t_.records[i]);
      check_no_unrecorded_failure();
      digest_live();
    } catch (const divergence& d) {
      report_.matched = false;
      report_.divergence = d.what();
    }
    return std::move(report_);
  }

private:
  // -- start-up and shutdown ----------------------------------------------------------------------

  void start(const std::vector<device>& devices) {
    topology_setup ts;
    ts.devices = devices;
    ts.store_base = store_base_;
    ts.store_size = store_bytes_;
    if (env_)
      ts.process = env_->setup();
    else // the recorded awaits (graph/op.hpp) order the lanes here too
      ts.board = &local_board_->board();
    ts.start_timeout = opt_.timeout;
    ts.stop_timeout = opt_.timeout;
    ts.peers = peers_;
    ts.exports.timeout = opt_.timeout;
    ts.steps = opt_.steps;
    if (opt_.nodes && env_) // the nodes serve this replay for as long as it lives
      opt_.nodes->start(sys_, caf::actor_cast<caf::actor>(self_.ptr()), *env_, store_bytes_,
                        opt_.timeout, opt_.timeout, "replay_options::timeout", opt_.steps);
    topo_.emplace(self_.ptr(), std::move(ts));
    for (const auto& d : devices) {
      replay_lane l;
      l.dev = d;
      lanes_.push_back(std::move(l));
    }
    const auto deadline = deadline_after(opt_.timeout);
    for (auto& l : lanes_) {
      while (!l.ready && l.down.empty() && pump(deadline)) {
      }
      if (!l.down.empty())
        throw error("start-up: runner of " + l.dev.str() + " stopped: " + l.down);
      if (!l.ready)
        throw error("start-up: no devicesReady from " + l.dev.str() + " within "
                    + duration_string(opt_.timeout));
    }
    topo_->started();
  }

  // Every runner stops (children exit, or are killed at the deadline) before the store goes.
  void stop() noexcept {
    if (!topo_)
      return;
    try {
      topo_->stop_lanes();
      auto lanes_down = [this] { return topo_->lanes_down(); };
      wait_down(lanes_down, deadline_after(saturating_add(opt_.timeout, std::chrono::seconds{5})));
      topo_->kill_lanes();
      wait_down(lanes_down, clock_type::now() + std::chrono::seconds{5});
      topo_->stop_services();
      wait_down([this] { return topo_->services_down(); },
                clock_type::now() + std::chrono::seconds{5});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ag-replay: shutdown: %s\n", e.what());
    }
    topo_.reset();
  }

  void wait_down(const std::function<bool()>& done, clock_type::time_point deadline) {
    while (!done() && pump(deadline)) {
    }
  }

  // -- messages from the runners ------------------------------------------------------------------

  // Handles one message, waiting at most until `deadline`; false when none came by then. Between
  // messages it tends the broadcast (Hellos during start-up, frames waiting on the ring).
  bool pump(clock_type::time_point deadline) {
    const auto until = topo_ ? std::min(deadline, topo_->tend()) : deadline;
    const auto left = std::max(until - clock_type::now(), clock_type::duration::zero());
    bool got = true;
    auto lane = [this](uint32_t l) -> replay_lane* {
      return l < lanes_.size() ? &lanes_[l] : nullptr;
    };
    self_->receive(
      [&](ready_atom, uint32_t l) {
        if (auto* ln = lane(l))
          ln->ready = true;
      },
      [&](done_atom, uint32_t l, uint64_t done, uint64_t, uint64_t live) {
        if (auto* ln = lane(l)) {
          ln->answers.push_back({false, done, live, {}});
          ln->heard = std::max(ln->heard, done);
        }
      },
      [&](failed_atom, uint32_t l, uint64_t index, std::string& what) {
        if (auto* ln = lane(l)) {
          ln->answers.push_back({true, index, 0, std::move(what)});
          ln->heard_failure = true;
        }
        else if (protocol_error_.empty())
          protocol_error_ = what;
      },
      [&](received_atom, uint32_t, uint64_t) {},
      [&](caf::down_msg& dm) {
        const auto ev = topo_->on_down(dm);
        if (ev.kind == lane_topology::down_kind::lane) {
          auto& l = lanes_[ev.lane];
          l.down = dm.reason ? describe(dm.reason, l.dev.str()) : "exited";
        }
      },
      caf::after(std::chrono::duration_cast<std::chrono::microseconds>(left)) >>
        [&] { got = false; });
    return got || clock_type::now() < deadline;
  }

  // Handles answers of lane l until `enough` holds; a divergence when it does not by the deadline.
  template <class Enough>
  void wait_answers(uint32_t l, Enough enough, const std::string& waiting_for) {
    auto& ln = lanes_[l];
    const auto deadline = deadline_after(opt_.timeout);
    while (!enough(ln)) {
      if (!protocol_error_.empty())
        throw divergence("a child sent a malformed message: " + protocol_error_);
      if (!ln.down.empty())
        throw divergence(name(l) + ": its runner stopped (" + ln.down + ") while "
                         + waiting_for);
      if (!pump(deadline))
        throw divergence(name(l) + ": no acknowledgement within "
                         + std::to_string(opt_.timeout.count()) + " ms while " + waiting_for);
    }
  }

  // The next answer of lane l; a divergence when there is none by the deadline.
  answer next_answer(uint32_t l, const std::string& waiting_for) {
    auto& ln = lanes_[l];
    wait_answers(l, [](const replay_lane& x) { return !x.answers.empty(); }, waiting_for);
    answer a = std::move(ln.answers.front());
    ln.answers.pop_front();
    return a;
  }

  // -- the recorded records -----------------------------------------------------------------------

  void step(const trace::record& r) {
    std::visit([&](const auto& x) { on(r, x); }, r.body);
  }

  void on(const trace::record&, const trace::begin_rec&) {}
  void on(const trace::record&, const trace::startup_rec&) {}
  void on(const trace::record&, const trace::end_rec&) {}
  // A collective is what its operators in the batches that follow do: those replay (and their
  // results are compared, as reads and live operands); the record itself is counted.
  void on(const trace::record&, const trace::collective_rec&) { ++report_.collectives; }

  void on(const trace::record& r, const trace::store_write_rec& x) {
    if (!x.data.empty())
      std::memcpy(store_base_ + x.offset, x.data.data(), x.data.size());
    writers_[x.id] = "the store write of record " + std::to_string(r.index);
    written_at_.erase(x.id);
  }

  void on(const trace::record& r, const trace::local_rec& x) {
    ++report_.messages;
    const std::string where = "local batch (record " + std::to_string(r.index) + ")";
    await_own_store_writes(x.b, where);
    note_sent(x.b, where);
    export_slots::clear_all(x.b, store_base_, store_bytes_); // the planner did, taking them
    if (topo_->remote(x.b.lane)) {
      wire::execute_msg m;
      m.batches.push_back(x.b);
      topo_->publish(wire::encode(m));
    } else {
      self_->send(topo_->stream(x.b.lane), execute_atom::value, x.b);
    }
  }

  void on(const trace::record& r, const trace::frame_rec& x) {
    if (x.type != wire::msg_type::execute)
      return; // this replay says its own Hellos, and Destroy at its end
    ++report_.messages;
    const std::string where =
      "message #" + std::to_string(x.id) + " (record " + std::to_string(r.index) + ")";
    wire::execute_msg m;
    wire::decode(x.body.data(), x.body.size(), m);
    wire::execute_msg remote;
    for (const auto& b : m.batches)
      await_own_store_writes(b, where);
    for (auto& b : m.batches) {
      note_sent(b, where);
      export_slots::clear_all(b, store_base_, store_bytes_); // the planner did, taking them
      if (topo_->remote(b.lane))
        remote.batches.push_back(b);
      else
        self_->send(topo_->stream(b.lane), execute_atom::value, b);
    }
    if (remote.batches.size() == m.batches.size() && !remote.batches.empty())
      topo_->publish(x.body); // the recorded bytes themselves
    else if (!remote.batches.empty())
      topo_->publish(wire::encode(remote));
  }

  void on(const trace::record& r, const trace::ack_rec& x) {
    if (x.type != wire::msg_type::done && x.type != wire::msg_type::failed)
      return; // ready was awaited at start-up; how often a child reports reading is timing
    answer want;
    if (x.type == wire::msg_type::done) {
      wire::done_msg m;
      wire::decode(x.body.data(), x.body.size(), m);
      want = {false, m.ops_done, m.device_bytes, {}};
    } else {
      wire::failed_msg m;
      wire::decode(x.body.data(), x.body.size(), m);
      want = {true, m.index, 0, m.what};
    }
    const auto& where = want.failed ? "operator " + std::to_string(want.index)
                                    : "the batch ending at operator " + std::to_string(want.index);
    const answer got = next_answer(x.lane, "waiting for " + where + " (record "
                                             + std::to_string(r.index) + ")");
    ++report_.acks;
    const std::string at = name(x.lane) + ", record " + std::to_string(r.index) + ": ";
    if (want.failed && !got.failed)
      throw divergence(at + "recorded a failure of " + op_at(x.lane, want.index) + " (" + want.what
                       + "); the replay ran it (done " + std::to_string(got.index) + ")");
    if (!want.failed && got.failed)
      throw divergence(at + "the replay failed at " + op_at(x.lane, got.index) + ": " + got.what
                       + "; the recording ran it");
    if (want.failed && got.index != want.index)
      throw divergence(at + "recorded a failure of " + op_at(x.lane, want.index)
                       + ", the replay failed at " + op_at(x.lane, got.index) + ": " + got.what);
    if (!want.failed && (got.index != want.index || got.live != want.live))
      throw divergence(at + "after " + op_at(x.lane, want.index) + " the recording had "
                       + std::to_string(want.index) + " operators done and "
                       + std::to_string(want.live) + " device bytes live; the replay has "
                       + std::to_string(got.index) + " and " + std::to_string(got.live));
  }

  void on(const trace::record& r, const trace::read_rec& x) {
    ++report_.reads;
    // A read waits for the operator that wrote the tensor, as the runtime's read does: on the
    // shared-memory path a read can be recorded before the acknowledgement it waited for.
    if (auto w = written_at_.find(x.id); w != written_at_.end()) {
      const uint32_t lane = w->second.lane;
      const uint64_t index = w->second.index;
      const std::string what =
        "the read of #" + std::to_string(x.id) + " (record " + std::to_string(r.index) + ")";
      wait_answers(lane, [index = index](const replay_lane& ln) {
        return ln.heard >= index || ln.heard_failure;
      }, what);
      // A recorded read is one whose writer ran in the recording.
      for (const auto& a : lanes_[lane].answers)
        if (a.failed && a.index <= index)
          throw divergence(name(lane) + ", " + what + ": the replay failed at "
                           + op_at(lane, a.index) + ": " + a.what + "; the recording ran it");
    }
    const auto* got = store_base_ + x.offset;
    report_.digests.push_back({"read #" + std::to_string(x.id), x.data.size(),
                               trace::digest(got, x.data.size())});
    if (x.data.empty() || std::memcmp(got, x.data.data(), x.data.size()) == 0)
      return;
    const std::size_t n = x.data.size() / sizeof(float);
    std::size_t differ = 0, first = n;
    float want_v = 0, got_v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      float w, g;
      std::memcpy(&w, x.data.data() + i * sizeof(float), sizeof w);
      std::memcpy(&g, got + i * sizeof(float), sizeof g);
      if (within(w, g))
        continue;
      if (differ++ == 0) {
        first = i;
        want_v = w;
        got_v = g;
      }
    }
    if (differ == 0 && x.data.size() % sizeof(float) == 0)
      return;
    char values[96];
    std::snprintf(values, sizeof values, "recorded %.9g, replayed %.9g", want_v, got_v);
    auto w = writers_.find(x.id);
    throw divergence("record " + std::to_string(r.index) + ": the read of #" + std::to_string(x.id)
                     + " (" + std::to_string(n) + " floats, written by "
                     + (w == writers_.end() ? std::string{"no recorded operator"} : w->second)
                     + ") differs at " + std::to_string(differ) + " elements; element "
                     + std::to_string(first) + ": " + values);
  }

  void on(const trace::record&, const trace::live_rec& x) { live_ = x.operands; }

  bool within(float want, float got) {
    if (std::memcmp(&want, &got, sizeof want) == 0)
      return true;
    if (opt_.tolerance <= 0)
      return false;
    if (std::isnan(want) || std::isnan(got))
      return std::isnan(want) && std::isnan(got);
    const double scale = std::max(1.0, std::abs(double(want)));
    const double rel = std::abs(double(got) - double(want)) / scale;
    if (rel > opt_.tolerance)
      return false;
    report_.worst_relative = std::max(report_.worst_relative, rel);
    return true;
  }

  // -- the end ------------------------------------------------------------------------------------

  void check_no_unrecorded_failure() {
    for (uint32_t l = 0; l < lanes_.size(); ++l)
      for (const auto& a : lanes_[l].answers)
        if (a.failed)
          throw divergence(name(l) + ": the replay failed at " + op_at(l, a.index) + ": " + a.what
                           + ", which the recording did not");
  }

  // Digests what the user still held: cpu tensors where they are, device operands once copied
  // behind the recorded store (one batch per lane, sent after everything recorded).
  void digest_live() {
    std::vector<std::pair<std::size_t, uint64_t>> copied; // live_ index, scratch offset
    std::vector<batch> batches(lanes_.size());
    uint64_t scratch = scratch_base_;
    for (std::size_t i = 0; i < live_.size(); ++i) {
      const auto& o = live_[i];
      if (o.lane == cpu_lane)
        continue;
      op_desc op;
      op.kind = op_kind::copy;
      op.a = {o.id, operand_ref::no_offset};
      op.out = {0, scratch};
      op.count = o.bytes / sizeof(float);
      batches[o.lane].ops.push_back(op);
      copied.emplace_back(i, scratch);
      scratch += round_up(o.bytes);
    }
    wire::execute_msg remote;
    for (uint32_t l = 0; l < lanes_.size(); ++l) {
      auto& b = batches[l];
      if (b.ops.empty())
        continue;
      b.lane = l;
      b.ops_before = lanes_[l].ops_after;
      note_sent(b, "the digest of the live operands");
      if (topo_->remote(l))
        remote.batches.push_back(b);
      else
        self_->send(topo_->stream(l), execute_atom::value, b);
    }
    if (!remote.batches.empty())
      topo_->publish(wire::encode(remote));
    for (uint32_t l = 0; l < lanes_.size(); ++l) {
      if (batches[l].ops.empty())
        continue;
      // Answers to batches the recording sent but never saw acknowledged come first.
      for (;;) {
        const auto a = next_answer(l, "copying the live operands out to digest them");
        if (a.failed)
          throw divergence(name(l) + ": digesting the live operands failed at "
                           + op_at(l, a.index) + ": " + a.what);
        if (a.index == batches[l].ops_after())
          break;
      }
    }
    std::size_t next_copied = 0;
    for (std::size_t i = 0; i < live_.size(); ++i) {
      const auto& o = live_[i];
      // Named after the recorded lane, so that a replay on other devices (--devices) gives the
      // same digests file.
      const std::string what =
        "live #" + std::to_string(o.id) + " on " + t_.begin.lanes.at(o.lane).str();
      uint64_t at = o.offset;
      if (o.lane != cpu_lane)
        at = copied[next_copied++].second;
      report_.digests.push_back({what, o.bytes, trace::digest(store_base_ + at, o.bytes)});
    }
  }

  // A lane on a node reads the store through the controller's copy, which holds what that lane
  // wrote there only once the write was acknowledged (Data-out comes before Done): the planner
  // has such a read wait for its own lane's writer (planner::enqueue), which a trace recorded
  // with the lanes on this machine did not need. Before b goes to a node lane, the replay waits
  // likewise for that lane's unacknowledged writes of the store ranges b reads.
  void await_own_store_writes(const batch& b, const std::string& where) {
    if (lanes_[b.lane].dev.local())
      return;
    for (const auto& r : host_reads(b)) {
      const auto w = store_writers_.find(r.offset);
      if (w == store_writers_.end() || w->second.lane != b.lane)
        continue;
      const uint64_t index = w->second.index;
      wait_answers(b.lane, [index](const replay_lane& ln) {
        return ln.heard >= index || ln.heard_failure;
      }, "the store range it wrote at " + std::to_string(r.offset) + " before " + where);
    }
    for (std::size_t i = 0; i < b.ops.size(); ++i)
      if (b.ops[i].kind == op_kind::copy && b.ops[i].out.on_host())
        store_writers_[b.ops[i].out.offset] = {b.lane, b.ops_before + i + 1};
  }

  // -- naming where -------------------------------------------------------------------------------

  void note_sent(const batch& b, const std::string& where) {
    auto& ln = lanes_[b.lane];
    ln.sent.push_back({b.ops_before + 1, b.ops_after(), where, b.ops});
    ln.ops_after = std::max(ln.ops_after, b.ops_after());
    for (std::size_t i = 0; i < b.ops.size(); ++i)
      if (b.ops[i].out.id != 0) {
        writers_[b.ops[i].out.id] = "operator " + std::to_string(b.ops_before + i + 1) + " of "
                                    + name(b.lane) + " (" + describe(b.ops[i]) + ") in " + where;
        written_at_[b.ops[i].out.id] = {b.lane, b.ops_before + i + 1};
      }
  }

  std::string name(uint32_t l) const {
    return "lane " + std::to_string(l) + " (" + lanes_[l].dev.str() + ")";
  }

  // "operator 7 (add #5 ...) of message #3 (record 9)".
  std::string op_at(uint32_t l, uint64_t index) const {
    const auto& sent = lanes_[l].sent;
    for (auto it = sent.rbegin(); it != sent.rend(); ++it)
      if (it->first <= index && index <= it->last)
        return "operator " + std::to_string(index) + " ("
               + describe(it->ops[index - it->first]) + ") of " + it->where;
    return "operator " + std::to_string(index);
  }

  caf::actor_system& sys_;
  const trace::file& t_;
  replay_options opt_;
  std::optional<process_env> env_; // process: directory, shared store, clean-up
  tensor_store local_store_;        // inproc
  std::unique_ptr<local_board> local_board_; // inproc
  std::byte* store_base_ = nullptr;
  uint64_t store_bytes_ = 0;
  uint64_t scratch_base_ = 0;
  caf::scoped_actor self_;
  std::optional<lane_topology> topo_; // the runners; destroyed by stop()
  bool peers_ = false; // the trace's lanes read each other's operands (peer_copy, peer_sum)
  std::vector<replay_lane> lanes_;
  std::unordered_map<operand_id, std::string> writers_; // who last wrote each operand
  // Node lanes: the copy that last wrote the store range at each offset (await_own_store_writes).
  std::unordered_map<uint64_t, dependency> store_writers_;
  std::unordered_map<operand_id, dependency> written_at_; // the operator that last wrote each
  std::vector<trace::live_operand> live_;
  std::string protocol_error_;
  replay_report report_;
};

} // namespace

replay_report replay(caf::actor_system& sys, const trace::file& recorded,
                     const replay_options& opt) {
  replayer r{sys, recorded, opt};
  return r.run();
}

} // namespace ag
