// node_protocol: what a controller and an ag-node say to each other over CAF's middleman (TLS,
// both sides authenticated by their ag-keygen identities), and how either side's actor system is
// set up for it.
//
//   controller -> node:  (nodestart, node_request) -> std::vector<caf::actor>: the runner proxy
//                        (runner_proxy_actor) of each lane asked for, in the order asked, each
//                        spawned on the node with its child started; or an error naming why not
//                        (another controller is being served, a device it cannot run, a child that
//                        did not start)
//   controller -> node:  (nodeprove, nonce) -> signature: before it asks anything, the
//                        controller has the node sign proof_text(its name, a fresh nonce) with
//                        its TLS key (ipc/identity.hpp), and checks it against the .public its
//                        graph_option::nodes names: the middleman's TLS trusts every listed
//                        node on every connection, so only this binds the name to the key
//   controller -> node:  (noderestrt, lane, generation, entries_before) -> caf::actor: the runner
//                        proxy of a new child for a lane whose child died (graph_option::
//                        max_restarts), started as the first was, its `generation`-th; an error
//                        when the lane has no restart left or is not this controller's
//   controller -> proxy: (shutdown), (kill), as to a local runner proxy; the controller monitors
//                        each, and a proxy's exit, the node's death and a lost connection all
//                        arrive as its down_msg
//   node:                monitors request.owner; once it is gone (or the connection is lost) it
//                        stops every child of that controller and serves the next one; it serves
//                        the next one also once every child stopped, unless one that died may
//                        still be started again (then once the controller is gone)
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actorgraph/device.hpp"
#include "graph/op.hpp"

namespace ag {

struct identity;

using node_start_atom = caf::atom_constant<caf::atom("nodestart")>;
using node_restart_atom = caf::atom_constant<caf::atom("noderestrt")>;
using node_prove_atom = caf::atom_constant<caf::atom("nodeprove")>;

struct node_request {
  caf::actor owner;            // who the node serves while it lives (the runtime's own actor)
  std::string controller_host; // where the node's children reach the controller's sockets
  uint16_t pub_port = 0;       // its broadcast (PUB, CURVE)
  uint16_t pull_port = 0;      // its reports (PULL, CURVE)
  std::vector<uint16_t> data_ports; // its data streams (PUB, CURVE), each child subscribing to all
  std::vector<uint16_t> return_ports; // its return streams (PULL, CURVE), each child pushing to all
  std::string controller_key;  // its CURVE public key (Z85): one the node allows
  std::vector<uint32_t> lanes; // the controller's lane numbers
  std::vector<device> devices; // each lane's device, as the node names it (cuda:0)
  uint64_t store_bytes = 0;    // the node's store mirrors the controller's offsets
  int64_t start_timeout_ms = 60000;
  int64_t stop_timeout_ms = 60000;
  // Steps as graphs on its children (graph_option::cuda_graphs and the options beside it).
  bool graphs = false;
  uint64_t max_graphs = 64;
  uint32_t graph_after = 2;
  // How many times each lane's child may be started again (graph_option::max_restarts).
  uint32_t max_restarts = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_request& x) {
  return f(caf::meta::type_name("ag::node_request"), x.owner, x.controller_host, x.pub_port,
           x.pull_port, x.data_ports, x.return_ports, x.controller_key, x.lanes, x.devices, x.store_bytes, x.start_timeout_ms,
           x.stop_timeout_ms, x.graphs, x.max_graphs, x.graph_after, x.max_restarts);
}

using node_actor =
  caf::typed_actor<caf::replies_to<node_start_atom, node_request>::with<std::vector<caf::actor>>,
                   caf::replies_to<node_restart_atom, uint32_t, uint32_t, uint64_t>::with<caf::actor>,
                   caf::replies_to<node_prove_atom, std::string>::with<std::string>>;

// Throws ag::error, saying why, when this program loads libssl before libactorgraph: CAF's TLS
// calls would then miss actors/tls_error_queue.cpp, and nodes are refused.
void check_tls_guard();

// Loads the middleman and its TLS into `cfg` (after check_tls_guard()): this machine proves itself with `self`, trusts only
// the certificates in `trust_file` (the peers' public identities, one after the other), treats a
// peer silent for `timeout` as gone, sends a heartbeat every 200 ms (or timeout / 5 when that is
// shorter: a peer with a timeout of a second or more never mistakes this side for silent), and
// knows the node messages' types.
void configure_node_network(caf::actor_system_config& cfg, const identity& self,
                            const std::string& trust_file, std::chrono::milliseconds timeout);

// Writes the certificates of `public_files` into `path` (mode 0600), for configure_node_network.
void write_trust_file(const std::string& path, const std::vector<std::string>& public_files);

// "tcp://HOST:PORT" -> HOST and PORT; throws ag::error naming `what` and the text otherwise.
std::pair<std::string, uint16_t> parse_tcp_endpoint(const std::string& text,
                                                    const std::string& what);

} // namespace ag
