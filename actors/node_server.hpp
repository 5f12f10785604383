// node_server: the actor ag-node publishes (the node side of node_protocol.hpp). It serves one
// controller at a time: for each lane the controller asks for it spawns a runner proxy here, which
// execs the child of that device on this machine with the same start-up path as a local child,
// connected to the controller over TCP with this node's CURVE identity, on a store of this node's
// own. A second controller is refused, naming the one served. Once the controller is gone (down,
// its connection lost or silent past the middleman's timeout) every child of it is killed; once
// every proxy is down the store goes and the next controller is served. An exit request (ag-node's SIGTERM) stops the children the same way before it quits.
#pragma once

#include <functional>
#include <set>
#include <string>

#include <caf/fwd.hpp>

#include "actors/node_protocol.hpp"

namespace ag {

struct node_server_setup {
  std::string name;                     // how controllers name this node ("n1")
  std::string curve_public;             // this node's CURVE keys, which its children use
  std::string curve_secret;
  std::set<std::string> controller_keys; // the CURVE public keys of the controllers allowed
  std::string runner_path;               // ag-runner (empty: found as a runtime finds it)
  // Non-empty: each child writes its timeline there as it exits (DIR/NAME-laneL-S.part, S the
  // controller served: its 1st, 2nd, ...), for a controller's timeline on this same machine.
  std::string timeline_dir;
  std::function<void(const std::string&)> log; // a line per controller served, refused or lost
  // Signs a proof text with this node's TLS key (ipc/identity.hpp: sign_proof).
  std::function<std::string(const std::string&)> prove;
};

node_actor spawn_node_server(caf::actor_system& sys, node_server_setup setup);

} // namespace ag
