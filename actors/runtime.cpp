// The controller: ag::runtime's implementation. Owns (or borrows) the actor system, the host
// tensor store and the executor; every wait on the user's thread is a request with a deadline.
#include "actorgraph/runtime.hpp"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>

#include <unistd.h>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/board_waits.hpp"
#include "actors/executor.hpp"
#include "actors/node_setup.hpp"
#include "actors/flow_control.hpp"
#include "actors/fork_guard.hpp"
#include "actors/lane_streams.hpp"
#include "actors/peer_lanes.hpp"
#include "actors/store_fence.hpp"
#include "actors/step_submits.hpp"
#include "actors/store_views.hpp"
#include "actors/process_env.hpp"
#include "actors/protocol.hpp"
#include "actors/quiet_pool.hpp"
#include "actors/reply_wait.hpp"
#include "actors/runtime_devices.hpp"
#include "cuda/kernel_stream.hpp"
#include "graph/deadline.hpp"
#include "graph/export_slot.hpp"
#include "graph/runtime_core.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/cpu_budget.hpp"
#include "ipc/shm_channel.hpp"
#include "ipc/store_allocator.hpp"
#include "ipc/tensor_store.hpp"
#include "ipc/timeline.hpp"
#include "ipc/trace.hpp"

namespace ag {

namespace {

constexpr int user_wait_track = 1001; // on the controller's timeline, beside the puller's

// CAF keeps a reference to the actor system's logger in a thread-local of every thread that
// built a system, spawned an actor or made a scoped actor; ~actor_system waits until every such
// reference is gone. A user's thread that outlives the runtime would hold it forever, and
// destroying the runtime on any other thread would hang: drop it as soon as the call is over.
void forget_thread_logger() noexcept { caf::logger::set_current_actor_system(nullptr); }

} // namespace

namespace detail {

class controller final : public runtime_core {
public:
  controller(caf::actor_system* borrowed, graph_option opt) : opt_(std::move(opt)) {
    for (auto [name, d] : {std::pair{"wait_timeout", &opt_.wait_timeout},
                           std::pair{"start_timeout", &opt_.start_timeout},
                           std::pair{"progress_timeout", &opt_.progress_timeout},
                           std::pair{"node_timeout", &opt_.node_timeout}}) {
      if (d->count() <= 0)
        throw error(std::string{"graph_option::"} + name
                    + " must be positive (milliseconds::max() means no deadline)");
      *d = normalized(*d);
    }
    if (opt_.spin_wait.count() < 0)
      throw error("graph_option::spin_wait must not be negative");
    opt_.spin_wait = std::min(opt_.spin_wait, max_spin_wait); // saturates at its ceiling
    if (opt_.store_bytes < min_store_bytes)
      throw error("graph_option::store_bytes " + std::to_string(opt_.store_bytes)
                  + " is below the smallest store, " + std::to_string(min_store_bytes)
                  + " bytes; set it to that or more (default 1 GiB)");
    const bool with_nodes =
      !opt_.nodes.empty()
      || std::any_of(opt_.devices.begin(), opt_.devices.end(), [](auto& d) { return !d.local(); });
    if (with_nodes)
      check_node_options(opt_);
    // Children on nodes read their batches from the sockets, and so, for now, do local ones.
    const bool shm = opt_.transport == transport::shared_memory && !with_nodes;
    if (opt_.transport != transport::shared_memory && opt_.transport != transport::sockets)
      throw error("graph_option::transport " + std::to_string(static_cast<int>(opt_.transport))
                  + " is neither shared_memory nor sockets");
    if (shm && opt_.per_device_per_process
        && (opt_.ring_bytes < min_ring_bytes || opt_.ring_bytes > max_ring_bytes
            || (opt_.ring_bytes & (opt_.ring_bytes - 1)) != 0))
      throw error("graph_option::ring_bytes " + std::to_string(opt_.ring_bytes)
                  + " must be a power of two from " + std::to_string(min_ring_bytes) + " (64 KiB) to "
                  + std::to_string(max_ring_bytes) + " (2 GiB); the default is 4 MiB");
    devices_ = resolve_devices(opt_.devices);
    std::vector<std::string> lane_names(devices_.size() + 1);
    lane_names[cpu_lane] = "cpu";
    for (std::size_t i = 0; i < devices_.size(); ++i)
      lane_names[device_lane(i)] = devices_[i].str();
    flow_ = std::make_shared<flow_control>(
      lane_names,
      flow_control::limits{opt_.max_in_flight_ops, opt_.max_in_flight_bytes});
    executor_setup setup;
    setup.devices = devices_;
    setup.steps = steps_of(opt_);
    setup.streams = streams_ = std::make_shared<lane_streams>(devices_.size() + 1);
    if (opt_.per_device_per_process) {
      if (with_nodes) { // before anything is created: its errors name the options
        auto lanes = devices_;
        lanes.insert(lanes.begin(), device::cpu());
        nodes_.emplace(opt_.nodes, opt_.key_file, std::move(lanes));
        // Still before anything is created: a node that does not answer fails start-up here,
        // by start_timeout, with nothing to clean up.
        nodes_->probe(opt_.start_timeout, "graph_option::start_timeout");
      }
      env_.emplace(opt_.store_bytes, devices_.size(), opt_.runner_path, shm ? opt_.ring_bytes : 0,
                   opt_.spin_wait, opt_.wait_timeout, !opt_.timeline_path.empty());
      if (nodes_)
        nodes_->open(*env_, env_->trust_file(), opt_.node_streams);
      setup.process = env_->setup();
      if (shm)
        board_ = &env_->setup().channel->board();
    } else {
      store_ = tensor_store::anonymous(opt_.store_bytes);
    }
    // The waits are answered on a board: the channel's, or one in this process's memory, on which
    // the stream actors (thread mode) or the puller (the children on the sockets) publish.
    if (!board_ && (shm || opt_.per_device_per_process)) {
      local_board_ = std::make_unique<local_board>(static_cast<uint32_t>(devices_.size() + 1));
      board_ = &local_board_->board();
    }
    // Once nothing above can fail: a runtime that could not be set up leaves no trace file.
    if (!opt_.trace_path.empty())
      setup.plan.trace = trace_ = std::make_shared<trace::writer>(opt_.trace_path);
    if (!opt_.timeline_path.empty()) {
      // Written when the runtime ends; a path it could not write is refused now, not then.
      if (!std::ofstream{opt_.timeline_path})
        throw error("timeline " + opt_.timeline_path + ": cannot create: "
                    + std::strerror(errno));
      setup.plan.timeline = timeline_ = std::make_shared<timeline>();
      timeline_->name_track(::getpid(), user_wait_track, "user's waits");
    }
    setup.start_timeout = opt_.start_timeout;
    if (board_) {
      setup.plan.board = board_;
      setup.plan.runners_see_board = shm;
      setup.linger = opt_.spin_wait;
      board_->count_cpus(usable_cpus()); // spinners leave a CPU to the threads they wait for
      board_waits_.emplace(*board_, std::move(lane_names), opt_.wait_timeout,
                           spin_policy{opt_.spin_wait, board_->seat()});
    }
    {
      auto lanes = devices_;
      lanes.insert(lanes.begin(), device::cpu());
      setup.plan.peers = peer_lanes(
        lanes, peer_choice{opt_.per_device_per_process, opt_.peer_transfers, opt_.sim_peers});
    }
    setup.plan.wait_timeout = opt_.wait_timeout;
    setup.plan.max_queued_bytes = opt_.max_queued_bytes;
    setup.plan.progress_timeout = opt_.progress_timeout;
    setup.plan.max_restarts = opt_.max_restarts; // remote lanes alone restart
    setup.plan.flow = flow_;
    if (env_) // every process writes the shared store: its pages are reserved before use
      setup.plan.reserve_store = [this](uint64_t end) { return env_->store().reserve_to(end); };
    setup.plan.store_base = store().base();
    setup.plan.store_size = store_size_ = store().size();
    setup.plan.store = allocator_ =
      std::make_shared<store_allocator>(store_size_, std::move(setup.plan.reserve_store));
    if (borrowed == nullptr) {
      // Every actor of the runtime is detached: the scheduler's pool only needs a thread or two.
      cfg_.emplace();
      quiet_pool(*cfg_);
      if (with_nodes)
        nodes_->configure(*cfg_, env_->trust_file(), opt_.node_timeout);
      owned_.emplace(*cfg_);
      sys_ = &*owned_;
    } else {
      if (with_nodes)
        throw error("graph_option::nodes: a runtime on a borrowed actor system cannot reach nodes "
                    "yet (its system would need this controller's TLS identity); let the runtime "
                    "own its system");
      sys_ = borrowed;
    }
    askers_.emplace(*sys_);
    if (with_nodes) {
      // Who the nodes serve: this runtime, for as long as it lives (or its process does).
      presence_ = spawn_presence(*sys_);
      try {
        nodes_->start(*sys_, presence_, *env_, store().size(), opt_.start_timeout,
                      stop_timeout(opt_.wait_timeout), "graph_option::start_timeout", setup.steps,
                      opt_.max_restarts);
      } catch (...) {
        caf::anon_send_exit(presence_, caf::exit_reason::user_shutdown);
        release_node_proxies();
        forget_thread_logger();
        throw;
      }
    }
    submits_.attach(executor_ = spawn_executor(*sys_, std::move(setup)));
    forget_thread_logger();
    try {
      ask<caf::unit_t>("start-up (waiting for every runner to be ready)",
                       request_timeout(opt_.start_timeout), wait_ready_atom::value);
    } catch (...) {
      stop();
      throw;
    }
  }

  ~controller() override { stop(); }

  // Stops every runner and releases what the runtime holds; threads still waiting on it, or
  // blocked for room to submit, get ag::error saying the runtime was destroyed. Any thread may call
  // it, once or more; only the first call does anything.
  void stop() noexcept {
    if (stopped_.exchange(true))
      return;
    flow_->close("the runtime was destroyed");
    bool stopped = false;
    try {
      const auto problems = ask<std::string>(
        "shutdown", request_timeout(stop_timeout(opt_.wait_timeout)), shutdown_atom::value);
      if (!problems.empty())
        std::cerr << "actorgraph: shutdown: " << problems << '\n';
      stopped = true;
    } catch (const std::exception& e) {
      std::cerr << "actorgraph: " << e.what() << '\n';
    }
    if (askers_)
      askers_->close(); // before the actor system ends
    caf::anon_send_exit(executor_, caf::exit_reason::user_shutdown);
    if (presence_) // the nodes end whatever they still run for this runtime
      caf::anon_send_exit(presence_, caf::exit_reason::user_shutdown);
    release_node_proxies();
    finish_records();
    if (!stopped) {
      // A runner may still touch the store: keep it mapped rather than risk a crash.
      // Deliberately never freed: this runtime's members are destroyed next, and the mapping
      // must outlive them.
      new tensor_store(std::move(store()));
      // Likewise the board they publish on.
      (void)local_board_.release();
      if (env_ && env_->setup().channel)
        new std::shared_ptr<shm_channel>(env_->setup().channel);
    }
    views_.stop(store()); // host_bytes pointers still alive keep the mapping
  }

  bool has_device(const device& d) const noexcept override {
    return d.is_cpu() || std::find(devices_.begin(), devices_.end(), d) != devices_.end();
  }

  // A range only while the store stays at most half full with it: the executor places what it
  // holds in the other half (an operator larger than that goes through the store in pieces).
  std::optional<staging> stage(uint64_t bytes) override {
    if (fork_.forked() || stopped_ || bytes == 0 || bytes > store_size_ / 2
        || allocator_->live_bytes() + bytes > store_size_ / 2)
      return std::nullopt;
    const auto offset = allocator_->allocate(bytes);
    if (!offset)
      return std::nullopt;
    try {
      return staging{*offset, views_.view(store(), *offset, "tensor")};
    } catch (const error&) { // the runtime stopped: the request fails as it is submitted
      allocator_->deallocate(*offset, bytes);
      return std::nullopt;
    }
  }

  void unstage(uint64_t offset, uint64_t bytes) noexcept override {
    allocator_->deallocate(offset, bytes);
  }

  // Blocks while the operator's device has no room (graph_option::max_in_flight_ops and the
  // bounds beside it), up to wait_timeout.
  void submit(op_request&& req) override {
    if (fork_.forked()) // the words are built only then: this is on every operator's path
      fork_.refuse(to_string(req.kind));
    const uint32_t lane = lane_of(req.where);
    if (auto why = flow_->acquire(lane, req.data.size(), opt_.wait_timeout);
        !why.empty())
      throw error(to_string(req.kind) + " -> #" + std::to_string(req.out) + " on "
                  + req.where.str() + ": " + why);
    submits_.submit(std::move(req));
  }

  // A collective takes one credit, on its first result's device.
  void submit(collective_request&& req) override {
    if (fork_.forked()) // the words are built only then: this is on every operator's path
      fork_.refuse(describe(req));
    const uint32_t lane = lane_of(req.to.front());
    if (auto why = flow_->acquire(lane, 0, opt_.wait_timeout); !why.empty())
      throw error(describe(req) + ": " + why);
    submits_.submit(std::move(req));
  }

  void release(operand_id id) noexcept override {
    if (fork_.forked()) // the parent's tensor, which the parent releases
      return;
    store_fence::release(); // this thread's reads of the tensor's range come first
    submits_.release(id);
  }

  void read(operand_id id, uint64_t bytes, const destination& into) override {
    const std::string what = "to_vector of tensor #" + std::to_string(id);
    const auto offset = written(what, id, bytes);
    char* out = into();
    if (bytes > 0)
      std::memcpy(out, store().base() + offset, bytes);
    record_read(id, offset, out, bytes);
  }

  std::shared_ptr<const std::byte> view(operand_id id, uint64_t bytes) override {
    const std::string what = "host_bytes of tensor #" + std::to_string(id);
    const auto offset = written(what, id, bytes);
    auto p = views_.view(store(), offset, what);
    record_read(id, offset, reinterpret_cast<const char*>(p.get()), bytes);
    return p;
  }

  std::shared_ptr<void> share(operand_id id, uint64_t bytes, std::intptr_t stream) override {
    const std::string what = "device_bytes of tensor #" + std::to_string(id);
    if (fork_.forked())
      fork_.refuse(what);
    const auto slot = wait<uint64_t>(what, share_atom::value, id);
    if (!store().contains(slot, sizeof(export_slot)))
      throw error(what + ": store range out of bounds");
    return streams_->share(store().base() + slot, bytes, devices_, stream, what); // it ran
  }

  bool piecewise(uint64_t bytes) const noexcept override {
    return bytes > store_size_ / 2;
  }

  // A piece at a time: the executor copies it to a staging range, this thread copies it out and
  // gives the range back. Reads of this kind are not recorded in a trace.
  void read_device(operand_id id, uint64_t bytes, const destination& into) override {
    const std::string what = "to_vector of tensor #" + std::to_string(id);
    if (fork_.forked())
      fork_.refuse(what);
    const uint64_t piece = std::max<uint64_t>(1, store_size_ / 4);
    char* out = nullptr;
    for (uint64_t first = 0; first < bytes; first += piece) {
      const uint64_t n = std::min<uint64_t>(piece, bytes - first);
      // The first piece is waited for before the result is allocated: a producer that failed is
      // reported as such, not as the host memory its result would have needed.
      const auto offset = wait<uint64_t>(what, fetch_atom::value, id, first, n);
      if (!store().contains(offset, n))
        throw error(what + ": store range out of bounds");
      if (first == 0)
        out = into();
      store_fence::acquire();
      std::memcpy(out + first, store().base() + offset, n);
      store_fence::release();
      caf::anon_send(executor_, unstage_atom::value, offset, n);
    }
  }

  void sync() override {
    if (fork_.forked())
      fork_.refuse("sync");
    const auto span = wait_span("sync");
    if (board_ && board_waits_->sync(*ticket())) // every entry before acknowledged, on the board
      return;
    if (board_ && stopped_)
      throw error("sync: the runtime was destroyed while it waited");
    wait<caf::unit_t>("sync", sync_atom::value);
  }

  // A user's wait on the timeline: from the call to its answer (a round trip, when nothing queued).
  timeline::scoped_span wait_span(const char* what) {
    return timeline::scoped_span{timeline_.get(), ::getpid(), user_wait_track, what, "user"};
  }

  void mark_step() { fork_.forked() ? fork_.refuse("mark_step") : submits_.mark(); }

  runtime_stats stats() {
    if (fork_.forked())
      fork_.refuse("stats");
    const auto [store_bytes, device_bytes, batches, operators, restarts] =
      wait<stats_reply>("stats", stats_atom::value);
    const auto flow = flow_->stats();
    return {store_bytes, device_bytes, batches, operators,
            std::accumulate(flow.ops.begin(), flow.ops.end(), std::size_t{0}), flow.blocked, restarts};
  }

  const std::vector<device>& devices() const noexcept { return devices_; }
  const graph_option& option() const noexcept { return opt_; }
  bool forked() const noexcept { return fork_.forked(); }

private:
  // The host store: shared with the children in process mode, this process's memory otherwise.
  tensor_store& store() noexcept { return env_ ? env_->store() : store_; }

  // Closes the trace and writes the timeline, the children's parts merged (they wrote them as they
  // exited). What cannot be written is reported, never thrown: this runs in the destructor.
  void finish_records() noexcept {
    if (trace_)
      if (auto why = trace_->close(); !why.empty())
        std::cerr << "actorgraph: " << why << '\n';
    if (!timeline_)
      return;
    if (opt_.per_device_per_process)
      for (std::size_t i = 0; i < devices_.size(); ++i) {
        const auto& dev = devices_[i];
        if (!dev.local()) // a node's children keep their timelines there (not merged yet)
          continue;
        try { // a part that cannot be merged costs its own events, not the timeline
          if (!timeline_->merge_part(timeline_part(env_->setup(), device_lane(i))))
            std::cerr << "actorgraph: timeline: " << dev.str()
                      << " left no events (its child did not exit in order)\n";
        } catch (const std::exception& e) {
          std::cerr << "actorgraph: timeline: the events of " << dev.str()
                    << " are left out: " << e.what() << '\n';
        }
      }
    try {
      timeline_->write(opt_.timeline_path);
    } catch (const std::exception& e) {
      std::cerr << "actorgraph: " << e.what() << '\n';
    }
  }

  // The runner proxies of node lanes, which the network setup holds for the executor: let go
  // before the actor system ends. The environment (and the setup in it) outlives the system, and
  // ~actor_system waits for every detached actor to be destroyed: a reference held past it hung
  // the runtime's destruction (now and then, as the proxies' ends raced it).
  void release_node_proxies() noexcept {
    if (env_ && env_->setup().network)
      env_->setup().network->lane_proxy.clear();
  }

  // The store offset of cpu operand id (`bytes` bytes) once written, its writes visible here.
  uint64_t written(const std::string& what, operand_id id, uint64_t bytes) {
    if (fork_.forked())
      fork_.refuse(what);
    const auto span = wait_span("read");
    std::optional<uint64_t> fast;
    if (board_) {
      fast = board_waits_->read(*ticket(id), what); // nullopt: the executor answers
      if (!fast && stopped_)
        throw error(what + ": the runtime was destroyed while it waited");
    }
    const auto offset = fast ? *fast : wait<uint64_t>(what, fetch_atom::value, id);
    store_fence::acquire();
    if (!store().contains(offset, bytes))
      throw error(what + ": store range out of bounds");
    return offset;
  }

  void record_read(operand_id id, uint64_t offset, const char* data, uint64_t bytes) {
    if (!trace_)
      return;
    trace::read_rec rec{id, offset, {}};
    rec.data.assign(data, data + bytes);
    trace_->write(rec);
  }

  // -- the shared-memory path: waits answered on the completion board ------------------------------

  // The slot the executor leaves the ticket of a wait in (`xs`: what is waited for, nothing for a
  // sync), asked for after what this thread submitted before.
  template <class... Ts>
  ticket_slot_ptr ticket(Ts... xs) {
    auto slot = std::make_shared<ticket_slot>();
    submits_.flush();
    caf::anon_send(executor_, ticket_atom::value, xs..., slot);
    return slot;
  }

  uint32_t lane_of(const device& d) const noexcept {
    for (std::size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i] == d)
        return device_lane(i);
    return cpu_lane;
  }

  // A wait of the user's thread on the executor, with the runtime's deadline; its error becomes
  // an ag::error. The executor answers every wait by wait_timeout, naming who is silent; this
  // deadline only guards against an executor that does not answer at all.
  template <class T, class... Ts>
  T wait(const std::string& what, Ts&&... xs) {
    if (stopped_)
      throw error(what + ": the runtime was destroyed");
    return ask<T>(what, request_timeout(opt_.wait_timeout), std::forward<Ts>(xs)...);
  }

  // T: caf::unit_t for an empty reply, std::tuple<...> for a reply of several values.
  template <class T, class... Ts>
  T ask(const std::string& what, std::chrono::milliseconds timeout, Ts&&... xs) {
    submits_.flush(); // what the thread submitted before comes first
    caf::error err;
    std::optional<T> result;
    try {
      result = ask_through<T>(*askers_, executor_, what, timeout, err, std::forward<Ts>(xs)...);
    } catch (...) { // interrupted
      forget_thread_logger();
      throw;
    }
    forget_thread_logger();
    if (err)
      throw error(describe(err, what));
    return std::move(*result);
  }

  fork_guard fork_;
  graph_option opt_;
  std::vector<device> devices_;
  std::unique_ptr<local_board> local_board_; // thread mode, the shared-memory path
  completion_board* board_ = nullptr;        // the shared-memory path: where waits are answered
  std::optional<board_waits> board_waits_;   // and how
  std::optional<process_env> env_; // process mode: directory, shared store, clean-up
  std::optional<node_setup> nodes_;  // with nodes
  tensor_store store_;              // thread mode
  store_views views_;               // zero-copy reads of the store
  std::optional<caf::actor_system_config> cfg_;
  std::optional<caf::actor_system> owned_;
  caf::actor_system* sys_ = nullptr;
  std::optional<asker_pool> askers_; // the user's threads' requests to the executor
  executor_actor executor_; // set once, before any other thread can see this runtime
  step_submits submits_;    // how operators and releases reach it
  caf::actor presence_;      // with nodes: who they serve
  std::shared_ptr<flow_control> flow_;
  std::size_t store_size_ = 0;
  std::shared_ptr<store_allocator> allocator_; // the planner's, shared
  std::shared_ptr<lane_streams> streams_;      // of the lanes in this process
  std::atomic<bool> stopped_{false};
  std::shared_ptr<trace::writer> trace_;
  std::shared_ptr<ag::timeline> timeline_;
};

} // namespace detail

runtime::runtime(graph_option opt)
  : core_(std::make_shared<detail::controller>(nullptr, std::move(opt))) {}

runtime::runtime(caf::actor_system& sys, graph_option opt)
  : core_(std::make_shared<detail::controller>(&sys, std::move(opt))) {}

runtime::~runtime() {
  if (core_->forked()) {
    // A copy in a process forked from the runtime's: its parent still runs it. Tearing it down here
    // would wait on threads this process does not have and unlink the parent's files.
    new std::shared_ptr<detail::controller>(std::move(core_)); // deliberately never freed
    return;
  }
  try {
    core_->sync();
  } catch (const std::exception& e) {
    std::cerr << "actorgraph: runtime destroyed with failed work: " << e.what() << '\n';
  }
  // Now, whichever thread this is and whoever else still holds the core for a moment (a thread
  // inside to_vector()): their waits end with ag::error. Tensors still alive hold weak references
  // only: once the core goes, they throw ag::error.
  core_->stop();
}

tensor runtime::full(const shape_t& shape, double value, const device& where, dtype type) {
  return detail::full(core_, shape, value, where, type, "cpu," + to_string(devices()));
}

tensor runtime::uniform(const shape_t& shape, double low, double high, uint64_t seed,
                        const device& where, dtype type) {
  return detail::random(core_, 0, shape, low, high, seed, where, type,
                        "cpu," + to_string(devices()));
}

tensor runtime::normal(const shape_t& shape, double mean, double std, uint64_t seed,
                       const device& where, dtype type) {
  return detail::random(core_, 1, shape, mean, std, seed, where, type,
                        "cpu," + to_string(devices()));
}

tensor runtime::from_bytes(const shape_t& shape, dtype type, const void* data, std::size_t nbytes,
                           const device& where) {
  return detail::from_bytes(core_, shape, type, data, nbytes, where,
                            "cpu," + to_string(devices()));
}

tensor runtime::from_vector(const shape_t& shape, const std::vector<float>& values,
                            const device& where) {
  return from_bytes(shape, dtype::float32, values.data(), values.size() * sizeof(float), where);
}

void runtime::sync() { core_->sync(); }

void runtime::mark_step() { core_->mark_step(); }

const std::vector<device>& runtime::devices() const noexcept { return core_->devices(); }

const graph_option& runtime::option() const noexcept { return core_->option(); }

runtime_stats runtime::stats() { return core_->stats(); }

} // namespace ag
