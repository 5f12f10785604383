// local_node: a node on this machine for ag-bench's node figures (docs/NODES.md, "The same
// walkthrough on one machine"): two identities made by the ag-keygen beside ag-bench in a fresh
// directory, and the ag-node beside ag-bench on 127.0.0.1, which lends its devices to that
// controller alone. Nothing of it outlives it: ag-node is stopped in order and the directory
// removed, and a stop signal that ends ag-bench first stops ag-node too.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <actorgraph/node.hpp>

#include "apps/ag-bench/logged_process.hpp"

namespace ag::bench {

class local_node {
public:
  // Makes the identities ctl and `name` in a fresh directory under $TMPDIR (mode 0700), then
  // starts ag-node --name=NAME --listen=tcp://127.0.0.1:0 with the ag-runner beside ag-bench,
  // allowing ctl, with `timeout` as its --timeout-ms, and waits up to 20 s for it to print where it
  // listens. Throws ag::error naming what failed (a program missing beside ag-bench, with the path
  // looked at; ag-keygen's or ag-node's exit with the end of its output); whatever it had started
  // or made is gone again by then.
  // timeline_dir non-empty: the node's children write their timelines there (ag-node
  // --timeline-dir), created if need be.
  local_node(const std::string& name, std::chrono::milliseconds timeout,
             const std::string& timeline_dir = {});
  ~local_node();
  local_node(const local_node&) = delete;
  local_node& operator=(const local_node&) = delete;

  // What graph_option::nodes names it by; the port is the one ag-node printed.
  ag::node as_node() const;
  // graph_option::key_file: the controller's identity (ctl.secret).
  std::string controller_key_file() const;

  // SIGTERM, then up to 20 s for ag-node to stop its children and exit (SIGKILL after that).
  // Throws ag::error, with the end of its output, unless it exited with code 0 (a stop by a
  // signal); once stopped, later calls do nothing.
  void stop();

private:
  // The controller's identity's name, and the logs of ag-keygen and ag-node, in the directory.
  static constexpr const char* controller = "ctl";
  static constexpr const char* keygen_log = "ag-keygen.log";
  static constexpr const char* node_log = "ag-node.log";

  // Reads the port from ag-node's log (`program`: its path, for errors).
  void await_listening(const std::string& program);
  // stop() without its verdict, for the destructor and a failed start.
  void halt() noexcept;

  // The directory of the identities and logs, removed with them when it goes, or by a stop
  // signal's clean-up (ipc/cleanup_registry.hpp) that ends ag-bench first.
  struct directory {
    std::string path;
    std::vector<int> cleanup_slots;
    explicit directory(const std::string& node_name);
    ~directory();
    std::string file(const std::string& name) const { return path + "/" + name; }
    directory(const directory&) = delete;
    directory& operator=(const directory&) = delete;
  };

  directory dir_; // first: it goes last, after ag-node has stopped
  std::string name_;
  logged_process node_;
  uint16_t port_ = 0;
};

// Makes SIGINT, SIGTERM, SIGHUP and SIGQUIT (each one not ignored) send SIGTERM to the ag-node of
// the local_node that runs, if one does, before they end ag-bench as they would have: it then
// stops its children and leaves nothing behind. Call it before ag::install_stop_signals(), whose
// handlers call these after their own clean-up.
void stop_local_node_on_signals();

} // namespace ag::bench
