// node_probe: a TLS handshake with a node's ag-node, by a deadline of our own, before CAF's
// middleman is asked to connect. CAF 0.17.6's connect cannot be given up from outside (a blocking
// TCP connect, then a request with no end), and a peer that accepts the connection but never
// completes the handshake keeps CAF's multiplexer thread spinning on that socket and
// ~actor_system waiting for it: a node that is not there, does not answer, speaks no TLS or proves
// another identity is found here instead, and start-up fails naming it with nothing to clean up.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ag {

struct identity;

struct probe_target {
  std::string who;         // "node n1 (tcp://HOST:PORT)": how errors name it
  std::string host;
  uint16_t port = 0;
  std::string public_file; // the node's ag-keygen .public: the one certificate trusted
};

// Connects to the target and completes a TLS handshake as `self` (as CAF's middleman does: its
// certificate and key, the peer's certificate required and checked against the target's
// .public), then closes the connection: all by `deadline`. `deadline_text` names the deadline in
// errors ("2000 ms (graph_option::start_timeout)"). Throws ag::error beginning with target.who
// and saying which step failed: the name, the TCP connection (refused, or none by the deadline),
// the handshake (none by the deadline, the connection closed, a certificate not the .public's, a
// refusal). Blocks at most until the deadline (a host name's lookup aside).
void probe_node(const probe_target& target, const identity& self,
                std::chrono::steady_clock::time_point deadline, const std::string& deadline_text);

} // namespace ag
