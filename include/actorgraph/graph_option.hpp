// graph_option: how a runtime is set up. The seed's GraphOption.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "actorgraph/device.hpp"
#include "actorgraph/node.hpp"

namespace ag {

// How waits are answered and, in process mode, how batches reach the children.
enum class transport {
  // The shared-memory path: a child reads its batches from a broadcast ring in memory the
  // controller and every child map, and every runner publishes its acknowledgements on a
  // completion board there, which a thread waiting in sync() or to_vector() watches itself.
  shared_memory,
  // The sockets alone: batches over the PUB socket, acknowledgements over PUSH/PULL, and every
  // wait answered by the executor actor (the path before the shared-memory one; for comparison).
  sockets,
};

// Whether steps that repeat (runtime::mark_step) run as graphs (graph_option::cuda_graphs).
enum class cuda_graphs {
  off,       // every step runs operator by operator, as without marks
  automatic, // a step a device runs again is captured once its memory settled, then replayed
};

// Bounds of the options below (each option's comment says what happens past its bound).
inline constexpr std::chrono::microseconds max_spin_wait{10000};
inline constexpr std::size_t min_store_bytes = 4096;
inline constexpr std::size_t min_ring_bytes = std::size_t{64} << 10;
inline constexpr std::size_t max_ring_bytes = std::size_t{2} << 30;

struct graph_option {
  // Devices that run operators besides the controller's cpu (which is always available). Empty
  // means "auto": every visible CUDA GPU, else sim:0,sim:1.
  std::vector<device> devices;

  // false: one stream actor per device inside the controller (thread mode, the seed's
  // PerDeviceThreadNodeRunner). true: one child process per device (process mode, the seed's
  // PerDeviceProcessNodeRunner). A process-mode runtime holds 9 file descriptors and 4 a device;
  // one that would pass the process's limit (RLIMIT_NOFILE, ulimit -n) with 3 to spare is refused
  // at start-up naming it.
  bool per_device_per_process = false;

  // Thread mode: moves and collectives between CUDA GPUs with peer access (or lanes that share a
  // GPU, AG_CUDA_ORDINALS) read each other's memory directly instead of going through the store.
  // false: everything between devices goes through the store. Process mode and nodes: always the
  // store, for now. The timeline says which path each transfer took, and why not a direct one.
  bool peer_transfers = true;
  // Thread mode: sim devices are peers of each other too (their memory is this process's), so
  // that the direct paths run without a GPU. A trace recorded so replays in-process only.
  bool sim_peers = false;

  // Size of the host tensor store (cpu tensors and the host half of every move), at least
  // min_store_bytes (4 KiB). Address space is reserved up front; pages are only touched as
  // tensors are written.
  // In process mode it is a shared-memory object every child maps. CUDA streams pin it
  // (cudaHostRegister) 64 MiB at a time, as copies first touch each part.
  std::size_t store_bytes = std::size_t{1} << 30;

  // Every timeout below takes std::chrono::milliseconds::max() (or anything over 100 years) as
  // "no deadline". A child's exit at shutdown is still given wait_timeout, or 60 s without one.

  // Deadline of every wait on the user's thread: sync(), to_vector(), shutdown, and an operator
  // that waits for room (below). A wait that passes it throws ag::error naming the devices that did
  // not answer. Also how long an operator waits for store space that acknowledgements will free.
  std::chrono::milliseconds wait_timeout{std::chrono::seconds{60}};

  // Deadline of start-up: every runner ready (in process mode: every child started and its
  // devicesReady received). Past it, the constructor throws naming the devices that did not report.
  std::chrono::milliseconds start_timeout{std::chrono::seconds{60}};

  // Backpressure: the work in flight is bounded, so that the controller's memory stays bounded
  // whatever the program submits. An operator call blocks the user's thread (up to wait_timeout,
  // then ag::error) while its device has max_in_flight_ops operators not yet acknowledged, while
  // from_vector data not yet copied into the store would pass max_in_flight_bytes (one larger
  // upload passes alone), or (process mode) while a child is more than max_queued_bytes behind in
  // reading the broadcasts the controller queues for it. A full device blocks only the threads
  // submitting to it; an operator waiting for store space holds back every operator after it.
  std::size_t max_in_flight_ops = std::size_t{1} << 16;
  std::size_t max_in_flight_bytes = std::size_t{256} << 20;
  std::size_t max_queued_bytes = std::size_t{256} << 20;

  // Process mode: a child that is behind in reading its broadcasts and reads none for this long is
  // failed (its device's work throws "sim:1 made no progress for 10000 ms") and killed. A child that
  // is slow but reading is never failed for being behind, and a child executing an operator counts
  // as making progress however long the operator takes (a stopped child does not): one hung inside
  // an operator while alive is found by the wait_timeout of the user's sync() and to_vector().
  std::chrono::milliseconds progress_timeout{std::chrono::seconds{10}};

  // Process mode: how many times each device's child is started again after it dies or is failed
  // (killed by a signal, failed by the watchdog, an operator's failure). The work in flight fails
  // as without restarts, naming the device; a new child is started within start_timeout, and
  // operators submitted from then on run on it. Tensors that lived on the dead child are lost:
  // using one throws ag::error saying so. Past max_restarts the device stays failed.
  // runtime_stats::restarts counts them. 0: a failed device stays failed.
  uint32_t max_restarts = 0;

  // The shared-memory path, or the sockets alone (above).
  ag::transport transport = ag::transport::shared_memory;

  // Every wait on a completion board or the ring (a user's thread in sync() or to_vector(), a
  // child waiting for its next batch) spins at most this long, then sleeps on a futex until it is
  // woken or its deadline passes. Busy, a hand-off then costs a cache-line transfer (well under a
  // microsecond); idle, nothing spins. Within it a wait spins only while a CPU stays free for the
  // threads it waits for (at most usable CPUs - 1 spinners, from the affinity mask and a cgroup
  // quota), and only as long as that thread's recent waits say spinning pays (a wait that outlasts
  // the spin halves the next). 0: sleep at once. Longer than max_spin_wait (10 ms) is taken as
  // max_spin_wait: past it a wait sleeps, however large the value (microseconds::max() too).
  std::chrono::microseconds spin_wait{50};

  // Process mode, the shared-memory path: bytes of the broadcast ring (a power of two from
  // min_ring_bytes, 64 KiB, to max_ring_bytes, 2 GiB). The largest broadcast is half of it; more
  // operators than that go in several.
  std::size_t ring_bytes = std::size_t{4} << 20;

  // Other machines whose devices are named in `devices` ("n1/cuda:0"), each running ag-node
  // (docs/NODES.md). Needs process mode and key_file. The runtime reaches them over TCP: its
  // control plane through CAF's middleman over TLS, batches, acknowledgements and tensors over
  // ZMQ with CURVE, both authenticated by the identities ag-keygen made. With nodes, every
  // child, local ones too, runs on the sockets path (transport is not used).
  std::vector<node> nodes;

  // This controller's identity, as ag-keygen wrote it ("keys/ctl.secret", mode 0600; its
  // ".public" beside it). Each node's ag-node must allow its public half (--allow).
  std::string key_file;

  // A node that answers nothing for this long is gone: its devices' work fails naming it. Its
  // ag-node likewise gives up on a silent controller after this long and stops its children.
  std::chrono::milliseconds node_timeout{std::chrono::seconds{5}};

  // How many encrypted connections carry the tensors each child on a node reads, besides the one
  // of its batches, and as many carry back what its batches write, besides the one of its
  // reports: one CURVE stream encrypts on one core, well below what a network moves. 0 to 16; 0:
  // the batches' and the reports' connections carry them too.
  std::size_t node_streams = 8;

  // Process mode: the ag-runner program. Empty: $AG_RUNNER, else the ag-runner installed beside
  // this library (<prefix>/bin), else one beside the running program.
  std::string runner_path;

  // Steps (runtime::mark_step) as CUDA graphs. A device that runs the same step again (the same
  // operators, shapes, dtypes and attributes) records it on its cuda_graph_after + 1-th run: its
  // operators are checked and given memory as always, but their kernels are captured into CUDA
  // graphs (copies from and to the host run between them as they are), launched from then on
  // whenever the step binds the same memory and scalars again. A run that binds others gets
  // graphs of its own, up to 8 bindings per step, past which the step's oldest are updated in
  // place (cudaGraphExecUpdate). Each device keeps the graphs of at most max_cuda_graphs
  // bindings, the least recently used going first; a graph holds no tensor memory, only the
  // driver's copy of its kernels' arguments. Steps of one operator, and steps with collectives,
  // direct transfers or awaits of another lane, run operator by operator. sim devices run the
  // same logic with the recorded calls in place of a CUDA graph. Results are bit for bit those of
  // operator-by-operator runs.
  ag::cuda_graphs cuda_graphs = ag::cuda_graphs::automatic;
  std::size_t max_cuda_graphs = 64;
  unsigned cuda_graph_after = 2; // at least 1: the first run of a step sets its memory up

  // Records every message the runners are sent and every acknowledgement into this file, for
  // ag-replay (docs/TRACE.md). Empty: nothing is recorded.
  std::string trace_path;

  // Writes a timeline of the executor's dispatches and every runner's batches and operators, one
  // track per device, as Chrome trace-event JSON (open it in ui.perfetto.dev) when the runtime
  // ends. Empty: none.
  std::string timeline_path;
};

} // namespace ag
