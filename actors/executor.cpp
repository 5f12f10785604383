#include "actors/executor.hpp"

#include <cstring>

#include <unistd.h>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>

#include <caf/all.hpp>

#include "actors/protocol.hpp"
#include "actors/publisher.hpp"
#include "actors/puller.hpp"
#include "actors/runner_proxy.hpp"
#include "actors/stream_actor.hpp"
#include "graph/op.hpp"
#include "ipc/store_allocator.hpp"
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

struct lane {
  device dev;
  caf::actor runner; // a stream actor, or (remote) the runner proxy of the lane's child
  bool remote = false;
  bool ready = false;
  bool down = false;
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
};

// Where the executor keeps an operand: on a device lane by id, or (cpu) in a store range written
// by the operator `writer`.
struct tensor_rec {
  uint32_t lane = cpu_lane;
  uint64_t offset = operand_ref::no_offset;
  uint64_t bytes = 0;
  dependency writer; // index 0: written before any operator (an upload)
};

// A store range released while operators issued before the release may still read it.
struct pending_free {
  uint64_t offset;
  uint64_t bytes;
  std::vector<uint64_t> issued; // per lane
};

struct pending_fetch {
  caf::response_promise promise;
  uint64_t offset;
  dependency writer;
};

struct pending_sync {
  caf::response_promise promise;
  std::vector<uint64_t> entries; // per lane
};

struct executor_state {
  std::vector<lane> lanes;
  std::byte* store_base = nullptr;
  std::size_t store_size = 0;
  std::unique_ptr<store_allocator> store;
  std::unordered_map<operand_id, tensor_rec> tensors;
  std::vector<pending_free> frees;
  std::vector<pending_fetch> fetches;
  std::vector<pending_sync> syncs;
  std::vector<caf::response_promise> ready_waiters;
  // Process mode: the sockets' actors, stopped after every lane.
  caf::actor publisher;
  caf::actor puller;
  bool publisher_down = false;
  bool puller_down = false;
  caf::response_promise shutdown_waiter;
  bool flush_scheduled = false;
  bool stopping = false;
  std::string failure; // the first error; every later wait answers with it
  uint64_t batches = 0;
  uint64_t operators = 0;

  static inline const char* name = "ag.executor";

  bool satisfied(const dependency& d) const { return lanes[d.lane].done >= d.index; }

  bool all_done(const std::vector<uint64_t>& issued) const {
    for (std::size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i].done < issued[i])
        return false;
    return true;
  }

  bool all_entries_done(const std::vector<uint64_t>& entries) const {
    for (std::size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i].entries_done < entries[i])
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

class executor_logic {
public:
  explicit executor_logic(executor_actor* self) : self_(self), st_(self->state) {}

  // The first failure wins; every waiter learns of it now, every later one at once.
  void fail(std::string what) {
    if (st_.failure.empty())
      st_.failure = std::move(what);
    auto err = [&] { return make_error(errc::device_failed, st_.failure); };
    for (auto& f : st_.fetches)
      f.promise.deliver(err());
    st_.fetches.clear();
    for (auto& s : st_.syncs)
      s.promise.deliver(err());
    st_.syncs.clear();
    for (auto& r : st_.ready_waiters)
      r.deliver(err());
    st_.ready_waiters.clear();
  }

  void schedule_flush() {
    if (!st_.flush_scheduled) {
      st_.flush_scheduled = true;
      self_->send(self_, flush_atom::value);
    }
  }

  // Appends an operator to a lane's queue; returns its index there.
  uint64_t enqueue(uint32_t l, const op_desc& op, std::vector<dependency> deps = {}) {
    auto& ln = st_.lanes[l];
    entry e;
    e.op = op;
    for (auto& d : deps)
      if (d.lane != l && d.index > 0)
        e.deps.push_back(d);
    ln.queue.push_back(std::move(e));
    ++ln.entries;
    return ++ln.issued;
  }

  std::optional<uint64_t> allocate(uint64_t bytes, const std::string& what) {
    auto off = st_.store->allocate(bytes);
    if (!off)
      fail("store full: " + what + " needs " + std::to_string(bytes) + " bytes; "
           + std::to_string(st_.store->live_bytes()) + " of "
           + std::to_string(st_.store->capacity())
           + " bytes are held (graph_option::store_bytes)");
    return off;
  }

  // Frees a store range once every operator issued so far has run.
  void free_later(uint64_t offset, uint64_t bytes) {
    st_.frees.push_back({offset, bytes, st_.issued_now()});
    collect();
  }

  const tensor_rec* find(operand_id id, const op_request& req) {
    auto it = st_.tensors.find(id);
    if (it != st_.tensors.end())
      return &it->second;
    // Only an operand whose own operator already failed can be missing.
    fail(to_string(req.kind) + " -> #" + std::to_string(req.out) + ": operand #"
         + std::to_string(id) + " does not exist");
    return nullptr;
  }

  std::optional<uint32_t> lane_of(const device& d) {
    for (uint32_t i = 0; i < st_.lanes.size(); ++i)
      if (st_.lanes[i].dev == d)
        return i;
    fail(d.str() + " is not a device of this runtime");
    return std::nullopt;
  }

  void submit(op_request& req) {
    auto target = lane_of(req.where);
    if (!target)
      return;
    const uint32_t l = *target;
    const uint64_t bytes = req.count * sizeof(float);
    switch (req.kind) {
      case op_kind::upload: return upload(l, req, bytes);
      case op_kind::copy: return move(l, req, bytes);
      default: return compute(l, req);
    }
  }

  void upload(uint32_t l, op_request& req, uint64_t bytes) {
    auto off = allocate(bytes, "from_vector -> #" + std::to_string(req.out));
    if (!off)
      return;
    std::memcpy(st_.store_base + *off, req.data.data(), bytes);
    if (l == cpu_lane) {
      st_.tensors[req.out] = {cpu_lane, *off, bytes, {}};
      return;
    }
    op_desc op;
    op.kind = op_kind::copy;
    op.out = {req.out, operand_ref::no_offset};
    op.a = {0, *off};
    op.count = req.count;
    enqueue(l, op);
    st_.tensors[req.out] = {l, operand_ref::no_offset, bytes, {}};
    free_later(*off, bytes);
  }

  // An explicit move: the source writes the store, the destination reads it once the source
  // acknowledged (the dependency holds the destination's half back).
  void move(uint32_t dst, op_request& req, uint64_t bytes) {
    const auto* src_rec = find(req.a, req);
    if (!src_rec)
      return;
    const tensor_rec src = *src_rec;
    op_desc op;
    op.kind = op_kind::copy;
    op.count = req.count;
    if (src.lane == cpu_lane) { // store -> device
      op.out = {req.out, operand_ref::no_offset};
      op.a = {req.a, src.offset};
      enqueue(dst, op, {src.writer});
      st_.tensors[req.out] = {dst, operand_ref::no_offset, bytes, {}};
      return;
    }
    const std::string what = "to(" + st_.lanes[dst].dev.str() + ") -> #" + std::to_string(req.out);
    auto off = allocate(bytes, what);
    if (!off)
      return;
    op.a = {req.a, operand_ref::no_offset};
    op.out = {dst == cpu_lane ? req.out : 0, *off};
    const dependency written{src.lane, enqueue(src.lane, op)};
    if (dst == cpu_lane) { // device -> store: the store range is the cpu tensor
      st_.tensors[req.out] = {cpu_lane, *off, bytes, written};
      return;
    }
    op_desc read; // device -> staging range -> device
    read.kind = op_kind::copy;
    read.count = req.count;
    read.out = {req.out, operand_ref::no_offset};
    read.a = {0, *off};
    enqueue(dst, read, {written});
    st_.tensors[req.out] = {dst, operand_ref::no_offset, bytes, {}};
    free_later(*off, bytes);
  }

  void compute(uint32_t l, op_request& req) {
    op_desc op;
    op.kind = req.kind;
    op.count = req.count;
    op.m = req.m;
    op.k = req.k;
    op.n = req.n;
    op.scalar = req.scalar;
    std::vector<dependency> deps;
    auto bind = [&](operand_id id, operand_ref& ref) {
      if (id == 0)
        return true;
      const auto* rec = find(id, req);
      if (!rec)
        return false;
      ref = {id, rec->offset};
      deps.push_back(rec->writer);
      return true;
    };
    if (!bind(req.a, op.a) || !bind(req.b, op.b))
      return;
    const uint64_t out_elems = req.kind == op_kind::sum      ? 1
                               : req.kind == op_kind::matmul ? req.m * req.n
                                                             : req.count;
    const uint64_t bytes = out_elems * sizeof(float);
    op.out = {req.out, operand_ref::no_offset};
    if (l == cpu_lane) {
      auto off = allocate(bytes, to_string(req.kind) + " -> #" + std::to_string(req.out));
      if (!off)
        return;
      op.out.offset = *off;
    }
    const uint64_t index = enqueue(l, op, std::move(deps));
    st_.tensors[req.out] = {l, op.out.offset, bytes, {l, index}};
  }

  void release(operand_id id) {
    auto it = st_.tensors.find(id);
    if (it == st_.tensors.end())
      return; // its operator failed before it was placed
    const tensor_rec rec = it->second;
    st_.tensors.erase(it);
    if (rec.lane == cpu_lane) {
      free_later(rec.offset, rec.bytes);
      return;
    }
    entry e;
    e.release = true;
    e.released = id;
    auto& ln = st_.lanes[rec.lane];
    ln.queue.push_back(std::move(e));
    ++ln.entries;
  }

  // Sends every lane what it can run now: a prefix of its queue whose dependencies are met.
  void dispatch() {
    wire::execute_msg broadcast;
    for (uint32_t l = 0; l < st_.lanes.size(); ++l) {
      auto& ln = st_.lanes[l];
      if (ln.queue.empty() || ln.down)
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
      if (ln.remote)
        broadcast.batches.push_back(std::move(b));
      else
        self_->send(ln.runner, execute_atom::value, std::move(b));
    }
    // One broadcast serves every child (each runs the batch of its own lane).
    if (!broadcast.batches.empty())
      self_->send(st_.publisher, publish_atom::value, std::move(broadcast));
  }

  // Answers the waits whose work is done and frees the store ranges nobody can read any more.
  void collect() {
    for (auto it = st_.frees.begin(); it != st_.frees.end();) {
      if (st_.all_done(it->issued)) {
        st_.store->deallocate(it->offset, it->bytes);
        it = st_.frees.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = st_.fetches.begin(); it != st_.fetches.end();) {
      if (st_.satisfied(it->writer)) {
        it->promise.deliver(it->offset);
        it = st_.fetches.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = st_.syncs.begin(); it != st_.syncs.end();) {
      if (st_.all_entries_done(it->entries)) {
        it->promise.deliver(caf::unit);
        it = st_.syncs.erase(it);
      } else {
        ++it;
      }
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
    st_.shutdown_waiter.deliver(caf::unit);
    self_->quit();
  }

  void on_down(const caf::down_msg& dm) {
    for (auto* service : {&st_.publisher, &st_.puller}) {
      if (*service && service->address() == dm.source) {
        (service == &st_.publisher ? st_.publisher_down : st_.puller_down) = true;
        if (!st_.stopping)
          fail(std::string{service == &st_.publisher ? "publisher" : "puller"}
               + " stopped: " + (dm.reason ? describe(dm.reason, "socket") : "exited"));
      }
    }
    for (auto& l : st_.lanes) {
      if (l.runner.address() != dm.source || l.down)
        continue;
      l.down = true;
      if (!st_.stopping) {
        std::string why = dm.reason ? describe(dm.reason, l.dev.str()) : "exited";
        fail("runner of " + l.dev.str() + " stopped"
             + (l.ready ? "" : " before it was ready") + ": " + why);
      }
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
  const auto start_timeout_ms = setup.start_timeout.count();
  st.store_base = setup.store_base;
  st.store_size = setup.store_size;
  st.store = std::make_unique<store_allocator>(setup.store_size);
  auto& sys = self->home_system();
  const auto me = caf::actor_cast<caf::actor>(self);
  auto devices = setup.devices;
  devices.insert(devices.begin(), device::cpu());
  if (setup.process) {
    auto& p = *setup.process;
    st.publisher = spawn_publisher(sys, p.zmq, p.pub_endpoint);
    st.puller = spawn_puller(sys, p.zmq, p.pull_endpoint, me);
    self->monitor(st.publisher);
    self->monitor(st.puller);
  }
  for (uint32_t i = 0; i < devices.size(); ++i) {
    lane l;
    l.dev = devices[i];
    l.remote = setup.process && !devices[i].is_cpu();
    if (l.remote) {
      auto& p = *setup.process;
      proxy_setup ps;
      ps.runner_path = p.runner_path;
      ps.segment_name = p.segment_prefix + "-sync-" + std::to_string(i);
      ps.args.pub_endpoint = p.pub_endpoint;
      ps.args.pull_endpoint = p.pull_endpoint;
      ps.args.where = devices[i];
      ps.args.lane = i;
      ps.args.store_name = p.store_name;
      ps.args.store_bytes = setup.store_size;
      ps.args.parent_pid = static_cast<int32_t>(::getpid());
      ps.args.wait_timeout_ms = static_cast<uint64_t>(p.timeout.count());
      ps.timeout = p.timeout;
      l.runner = spawn_runner_proxy(sys, std::move(ps));
    } else {
      l.runner = spawn_stream_actor(sys, me, i, devices[i], setup.store_base, setup.store_size,
                                    false);
    }
    self->monitor(l.runner);
    st.lanes.push_back(std::move(l));
  }
  self->set_down_handler([self](caf::down_msg& dm) { executor_logic{self}.on_down(dm); });
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
  return {
    [=](submit_atom, op_request& req) {
      executor_logic x{self};
      x.submit(req);
      x.schedule_flush();
    },
    [=](release_atom, operand_id id) {
      executor_logic x{self};
      x.release(id);
      x.schedule_flush();
    },
    [=](flush_atom) {
      self->state.flush_scheduled = false;
      executor_logic{self}.dispatch();
    },
    [=](ready_atom, uint32_t l) {
      auto& st = self->state;
      if (l >= st.lanes.size())
        return;
      st.lanes[l].ready = true;
      if (st.all_ready()) {
        if (st.publisher)
          self->send(st.publisher, ready_atom::value); // no more Hellos
        for (auto& r : st.ready_waiters)
          r.deliver(caf::unit);
        st.ready_waiters.clear();
      }
    },
    [=](done_atom, uint32_t l, uint64_t done, uint64_t live) {
      auto& st = self->state;
      if (l >= st.lanes.size())
        return;
      auto& ln = st.lanes[l];
      ln.done = done;
      ln.device_live_bytes = live;
      if (!ln.in_flight.empty()) {
        ln.entries_done = ln.in_flight.front();
        ln.in_flight.pop_front();
      }
      executor_logic x{self};
      x.dispatch();
      x.collect();
    },
    [=](failed_atom, uint32_t l, uint64_t index, std::string& what) {
      (void)l, (void)index;
      executor_logic{self}.fail(std::move(what));
    },
    [=](fetch_atom, operand_id id) -> caf::result<uint64_t> {
      auto& st = self->state;
      if (!st.failure.empty())
        return make_error(errc::device_failed, st.failure);
      auto it = st.tensors.find(id);
      if (it == st.tensors.end() || it->second.lane != cpu_lane)
        return make_error(errc::bad_request,
                          "read: operand #" + std::to_string(id) + " is not a cpu tensor");
      if (st.satisfied(it->second.writer))
        return it->second.offset;
      auto rp = self->make_response_promise();
      st.fetches.push_back({rp, it->second.offset, it->second.writer});
      return caf::delegated<uint64_t>{};
    },
    [=](sync_atom) -> caf::result<caf::unit_t> {
      auto& st = self->state;
      if (!st.failure.empty())
        return make_error(errc::device_failed, st.failure);
      auto entries = st.entries_now();
      if (st.all_entries_done(entries))
        return caf::unit;
      auto rp = self->make_response_promise();
      st.syncs.push_back({rp, std::move(entries)});
      return caf::delegated<caf::unit_t>{};
    },
    [=](wait_ready_atom, start_deadline_t) {
      auto& st = self->state;
      std::string missing;
      for (const auto& l : st.lanes)
        if (!l.ready)
          missing += (missing.empty() ? "" : ", ") + l.dev.str();
      if (!missing.empty())
        executor_logic{self}.fail("start-up: no devicesReady from " + missing + " within "
                                  + std::to_string(start_timeout_ms) + " ms");
    },
    [=](wait_ready_atom) -> caf::result<caf::unit_t> {
      auto& st = self->state;
      if (!st.failure.empty())
        return make_error(errc::device_failed, st.failure);
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
    [=](shutdown_atom) -> caf::result<caf::unit_t> {
      auto& st = self->state;
      st.stopping = true;
      st.shutdown_waiter = self->make_response_promise();
      if (st.publisher)
        self->send(st.publisher, destroy_atom::value);
      for (auto& l : st.lanes) {
        if (l.remote) // sets the exit flag, waits for the child (deadline, then SIGKILL)
          self->send(l.runner, shutdown_atom::value);
        else
          self->send_exit(l.runner, caf::exit_reason::user_shutdown);
      }
      executor_logic{self}.maybe_finish_shutdown();
      return caf::delegated<caf::unit_t>{};
    },
  };
}

} // namespace

caf::actor spawn_executor(caf::actor_system& sys, executor_setup setup) {
  return sys.spawn<caf::detached>(executor_fun, std::move(setup));
}

} // namespace ag
