// process_setup: where a controller's children are and how to start them (process mode): made by
// process_env, read by the lane topology that spawns the children's runner proxies.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/actor.hpp>

namespace zmq {
class context_t;
class socket_t;
} // namespace zmq

namespace ag {

class shm_channel;
class zap_handler;

// With nodes: the controller's TCP side of the broadcast and the reports, CURVE servers behind
// the ZAP handler, bound on every interface at ports the system picked, before any child starts.
// The publisher and the puller take the sockets.
struct network_setup {
  std::shared_ptr<zmq::context_t> ctx; // its own, with an I/O thread per connection's cipher
  std::shared_ptr<zap_handler> zap;    // up before the sockets, down after them
  std::shared_ptr<zmq::socket_t> pub;
  std::shared_ptr<zmq::socket_t> pull;
  uint16_t pub_port = 0;
  uint16_t pull_port = 0;
  // The data streams (graph_option::node_streams): PUB sockets that carry only Data-in pieces.
  std::vector<std::shared_ptr<zmq::socket_t>> data;
  std::vector<uint16_t> data_ports;
  // The return streams, as many: PULL sockets that carry only the nodes' Data-out pieces.
  std::vector<std::shared_ptr<zmq::socket_t>> returns;
  std::vector<uint16_t> return_ports;
  std::string curve_public;           // the controller's: the children's server key
  std::vector<std::string> lane_node; // per lane, the node it runs on ("": this machine)
  // Where each node's ag-node listens, and the address of this machine its children reach.
  struct node_target {
    std::string name;
    std::string host;
    uint16_t port = 0;
    std::string controller_host;
    std::string public_file; // its identity's public half, which it must prove it holds
  };
  std::vector<node_target> nodes;
  // Per lane, the runner proxy its node spawned (actors/node_client.hpp; null for a local lane),
  // and that node's actor, which starts a new child for the lane (graph_option::max_restarts).
  std::vector<caf::actor> lane_proxy;
  std::vector<caf::actor> lane_node_actor;
};

struct process_setup {
  std::shared_ptr<zmq::context_t> zmq;
  std::string pub_endpoint;
  std::string pull_endpoint;
  std::string store_name;
  int store_fd = -1; // the store's descriptor, which every child inherits
  std::string runner_path;
  std::string segment_prefix; // + "-sync-<lane>": each child's SubProcessSync segment
  std::string timeline_part_prefix; // + "<lane>": each child's timeline part (with a timeline)
  // The shared-memory path: the board and the ring every child maps (null: the sockets carry
  // the batches and the acknowledgements alone), and how long its waits spin before they sleep.
  std::shared_ptr<shm_channel> channel;
  std::chrono::nanoseconds spin{std::chrono::microseconds{50}};
  // How long a child's read of another child's export waits for it (graph_option::wait_timeout).
  std::chrono::milliseconds export_wait{60000};
  // With nodes (else null).
  std::shared_ptr<network_setup> network;
};

} // namespace ag
