// subscription_gate: which subscriptions a node's child may make on the controller's TCP
// broadcast and data streams. They are XPUBs in manual mode (zmqs::gated_publisher): every
// subscription reaches the controller with the User-Id its ZAP handler gave the peer's key (its
// node's name), and only what the gate allows is applied, so a node receives only its own lanes'
// store bytes (Data-in, Data-sent). The publisher's thread admits what waits before each Hello: a
// child subscribes as it starts, and waits for a Hello on every connection before it is ready.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <zmq.hpp>

namespace ag {

class subscription_gate {
public:
  // lane_node: per lane, the node it runs on ("" for this machine's lanes).
  explicit subscription_gate(std::vector<std::string> lane_node)
    : lane_node_(std::move(lane_node)) {}

  // Whether node `user` may subscribe to `topic` (a header prefix): every node to the 4-byte
  // prefixes of Hello, and on the broadcast (not a data stream) of Execute and Destroy; a node
  // to the 8-byte prefixes of Data-in and, on the broadcast, Data-sent, of its own lanes only.
  // Nothing else (an empty topic, another node's lane, another type) is allowed.
  bool allows(const std::string& user, const std::string& topic, bool data_stream) const;

  // Takes every subscription and unsubscription waiting on `s` (a gated publisher) and applies
  // those allowed; each refused one is told to `refuse` as a line naming the node and the topic.
  void admit(zmq::socket_t& s, bool data_stream,
             const std::function<void(const std::string&)>& refuse) const;

private:
  std::vector<std::string> lane_node_;
};

} // namespace ag
