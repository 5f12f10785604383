#include "actors/node_setup.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <caf/all.hpp>

#include "actorgraph/error.hpp"
#include "actors/node_client.hpp"
#include "actors/node_probe.hpp"
#include "actors/node_protocol.hpp"
#include "actors/process_env.hpp"
#include "actors/protocol.hpp"
#include "graph/deadline.hpp"

namespace ag {

node_setup::node_setup(std::vector<node> nodes, const std::string& key_file,
                       std::vector<device> lanes)
  : nodes_(std::move(nodes)), lanes_(std::move(lanes)) {
  std::set<std::string> names;
  std::set<std::string> keys;
  for (const auto& n : nodes_) {
    check_node_name(n.name, "graph_option::nodes");
    if (!names.insert(n.name).second)
      throw error("graph_option::nodes names node " + n.name + " twice");
    (void)parse_tcp_endpoint(n.endpoint, "node " + n.name + ": endpoint");
    if (n.public_key_file.empty())
      throw error("node " + n.name + ": no public_key_file (its ag-keygen .public file)");
  }
  for (const auto& d : lanes_)
    if (!d.local() && !names.count(d.node_name()))
      throw error("device " + d.str() + ": node " + d.node_name()
                  + " is not in graph_option::nodes");
  if (key_file.empty())
    throw error("graph_option::nodes needs graph_option::key_file, this controller's identity "
                "(ag-keygen)");
  self_ = load_identity(key_file);
  for (const auto& n : nodes_) {
    peers_.push_back(load_public(n.public_key_file));
    if (!keys.insert(peers_.back().curve_public).second)
      throw error("node " + n.name + ": its public key is another node's too");
  }
  check_tls_guard();
}

bool node_setup::has_lanes(const std::string& node_name) const {
  return std::any_of(lanes_.begin(), lanes_.end(),
                     [&](const device& d) { return !d.local() && d.node_name() == node_name; });
}

namespace {

// (An argument: CAF 0.17 dereferences a null pointer spawning a function without one.)
caf::behavior presence(caf::event_based_actor*, int /* unused */) { return {[](stats_atom) {}}; }

} // namespace

caf::actor spawn_presence(caf::actor_system& sys) { return sys.spawn(presence, 0); }

void node_setup::probe_one(std::size_t i, std::chrono::steady_clock::time_point deadline,
                           const std::string& deadline_text) const {
  const auto& n = nodes_[i];
  const auto [host, port] = parse_tcp_endpoint(n.endpoint, "node " + n.name + ": endpoint");
  probe_target t;
  t.who = "node " + n.name + " (tcp://" + host + ":" + std::to_string(port) + ")";
  t.host = host;
  t.port = port;
  t.public_file = n.public_key_file;
  probe_node(t, self_, deadline, deadline_text);
}

void node_setup::probe(std::chrono::milliseconds timeout, const std::string& timeout_name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (has_lanes(nodes_[i].name))
      probe_one(i, deadline_after(timeout), duration_string(timeout) + " (" + timeout_name + ")");
}

void node_setup::configure(caf::actor_system_config& cfg, const std::string& trust_file,
                           std::chrono::milliseconds timeout) const {
  configure_node_network(cfg, self_, trust_file, timeout);
}

void node_setup::open(process_env& env, const std::string& trust_file,
                      std::size_t streams) const {
  std::vector<std::string> files;
  std::map<std::string, std::string> allowed;
  std::vector<network_setup::node_target> targets;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const auto& n = nodes_[i];
    files.push_back(n.public_key_file);
    allowed.emplace(peers_[i].curve_public, n.name);
    const auto [host, port] = parse_tcp_endpoint(n.endpoint, "node " + n.name + ": endpoint");
    targets.push_back({n.name, host, port, local_address_towards(host, port), n.public_key_file});
  }
  write_trust_file(trust_file, files);
  std::vector<std::string> lane_node(lanes_.size());
  for (std::size_t l = 0; l < lanes_.size(); ++l)
    lane_node[l] = lanes_[l].node_name();
  env.open_network(self_.pub.curve_public, self_.curve_secret, allowed, std::move(lane_node),
                   std::move(targets), streams);
}

void node_setup::start(caf::actor_system& sys, const caf::actor& owner, process_env& env,
                       uint64_t store_bytes, std::chrono::milliseconds start_timeout,
                       std::chrono::milliseconds stop_timeout,
                       const std::string& timeout_name, const step_policy& steps, uint32_t max_restarts) const {
  auto& net = *env.setup().network;
  net.lane_proxy.assign(lanes_.size(), caf::actor{});
  net.lane_node_actor.assign(lanes_.size(), caf::actor{});
  const std::string deadline_text = duration_string(start_timeout) + " (" + timeout_name + ")";
  auto reprobe = [&](const network_setup::node_target& n,
                     std::chrono::steady_clock::time_point deadline) {
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      if (nodes_[i].name == n.name)
        probe_one(i, deadline, deadline_text);
  };
  for (auto& [lane, started] : start_node_lanes(sys, owner, net, lanes_, store_bytes,
                                                start_timeout, stop_timeout, reprobe, steps,
                                                max_restarts)) {
    net.lane_proxy[lane] = caf::actor_cast<caf::actor>(started.proxy);
    net.lane_node_actor[lane] = started.node;
  }
}

} // namespace ag
