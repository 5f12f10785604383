// node_setup: what a controller with devices on nodes prepares, in one place for the runtime and
// for ag-replay: it checks the nodes against the lanes, loads this controller's identity and the
// nodes' public halves, sets up the actor system's TLS (before the system exists), opens the data
// plane on the process environment (ZAP handler, CURVE sockets, the trust file), and asks the
// nodes for their lanes' children.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actorgraph/device.hpp"
#include "actorgraph/node.hpp"
#include "actors/step_policy.hpp"
#include "ipc/identity.hpp"

namespace ag {

class process_env;

// Whom the nodes serve (node_request::owner): an actor that lives as long as the runtime and does
// nothing; the runtime ends it to have the nodes end what they run for it.
caf::actor spawn_presence(caf::actor_system& sys);

class node_setup {
public:
  // `lanes`: lane 0 the cpu, then every device. Throws ag::error naming a bad node (name, endpoint,
  // a name listed twice, a key file that cannot be read or is another node's too), a device on a
  // node not listed, or the controller's identity; or saying that this program loads libssl
  // before libactorgraph (check_tls_guard), before any node is probed.
  node_setup(std::vector<node> nodes, const std::string& key_file, std::vector<device> lanes);

  // Before anything else is made: a TLS handshake with each node that has lanes, each by
  // `timeout` (`timeout_name` in errors: "graph_option::start_timeout"), so that a node that is
  // not there, answers nothing or proves another identity fails start-up at once, naming it, with
  // nothing to clean up (actors/node_probe.hpp). Throws ag::error naming the node.
  void probe(std::chrono::milliseconds timeout, const std::string& timeout_name) const;

  // Before the actor system is made: the middleman with TLS as this identity, trusting the
  // nodes' certificates from `trust_file` (which open() writes), a peer silent for `timeout` gone.
  void configure(caf::actor_system_config& cfg, const std::string& trust_file,
                 std::chrono::milliseconds timeout) const;

  // Writes `trust_file` and opens the data plane on `env` (env.setup().network), with `streams`
  // data streams (graph_option::node_streams).
  void open(process_env& env, const std::string& trust_file, std::size_t streams) const;

  // Asks each node for its lanes' children, serving `owner` (they stop once it is gone), and
  // leaves their proxies in env.setup().network->lane_proxy. Each node by `start_timeout`
  // (`timeout_name` in errors); one whose connection is tried again is probed again first.
  void start(caf::actor_system& sys, const caf::actor& owner, process_env& env,
             uint64_t store_bytes, std::chrono::milliseconds start_timeout,
             std::chrono::milliseconds stop_timeout, const std::string& timeout_name,
             const step_policy& steps, uint32_t max_restarts = 0) const;

private:
  bool has_lanes(const std::string& node_name) const;
  // Node i's TLS handshake, by `deadline` (`deadline_text` in errors).
  void probe_one(std::size_t i, std::chrono::steady_clock::time_point deadline,
                 const std::string& deadline_text) const;

  std::vector<node> nodes_;
  std::vector<device> lanes_;
  identity self_;
  std::vector<public_identity> peers_; // per node
};

} // namespace ag
