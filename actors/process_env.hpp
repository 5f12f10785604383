// process_env: what a controller of child processes sets up before it spawns them (the seed's
// PerDeviceProcessNodeRunner environment): the endpoints, the shared tensor store and channel
// (nameless once made: the children inherit their descriptors), the names of every
// SubProcessSync segment, the ag-runner program, and the children's timeline parts' directory
// (with a timeline only). Used by the runtime in process mode, by ag-node and by ag-replay.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actors/process_setup.hpp"
#include "actors/runner_proxy.hpp"
#include "ipc/memory_file.hpp"
#include "ipc/runtime_dir.hpp"
#include "ipc/tensor_store.hpp"

namespace ag {

// The ag-runner program: `configured` (the option named `option`), else $AG_RUNNER, else beside
// the installed library's programs or the running program. Throws ag::error naming the option.
std::string find_runner(const std::string& configured,
                        const std::string& option = "graph_option::runner_path");

// Registers files with the stop-signal clean-up for as long as it lives.
class cleanup_slots {
public:
  cleanup_slots() = default;
  cleanup_slots(const cleanup_slots&) = delete;
  cleanup_slots& operator=(const cleanup_slots&) = delete;
  ~cleanup_slots();
  void add(const std::string& path, bool is_dir);

private:
  std::vector<int> slots_;
};

class process_env {
public:
  // Removes what dead runtimes left, creates the directory and a store of store_bytes, and finds
  // ag-runner (runner_path, else $AG_RUNNER, else beside the installed library or the running
  // program). Throws ag::error naming what could not be set up.
  // ring_bytes: the broadcast ring of the shared-memory path (0: the sockets alone); spin: how long
  // its waits spin; export_wait: how long a child's read of another child's export waits for it.
  process_env(std::size_t store_bytes, std::size_t device_lanes, const std::string& runner_path,
              std::size_t ring_bytes = 0,
              std::chrono::nanoseconds spin = std::chrono::microseconds{50},
              std::chrono::milliseconds export_wait = std::chrono::milliseconds{60000},
              bool timeline_parts = false);
  process_env(const process_env&) = delete;
  process_env& operator=(const process_env&) = delete;

  tensor_store& store() noexcept { return store_; }
  // The file the middleman's TLS trusts (node_setup::open writes it): in memory, at a path of
  // this process ("/proc/self/fd/N"), so that nothing of it is left on disk.
  const std::string& trust_file();

  // With nodes: starts the ZAP handler that lets in the nodes' CURVE keys (`allowed`: key -> node
  // name), binds the TCP PUB and PULL and `streams` data PUBs (CURVE, this controller's keys) and
  // sets setup().network.
  void open_network(const std::string& curve_public, const std::string& curve_secret,
                    const std::map<std::string, std::string>& allowed,
                    std::vector<std::string> lane_node,
                    std::vector<network_setup::node_target> nodes, std::size_t streams);
  // Endpoints, store name, runner and segment names, for the executor (or ag-replay).
  const process_setup& setup() const noexcept { return setup_; }

private:
  cleanup_slots cleanup_; // first: forgotten only after everything below is gone
  runtime_dir dir_;       // with timeline_parts only; removed last, with what is in it
  tensor_store store_;
  process_setup setup_;
  std::optional<memory_file> trust_;
};

// Where the child of `lane` writes its timeline events as it exits (with a timeline).
std::string timeline_part(const process_setup& p, std::size_t lane);

// How the proxy of `lane` (on `where`) starts and stops its child.
proxy_setup make_proxy_setup(const process_setup& p, uint32_t lane, const device& where,
                             uint64_t store_bytes, std::chrono::milliseconds start_timeout,
                             std::chrono::milliseconds stop_timeout);

} // namespace ag
