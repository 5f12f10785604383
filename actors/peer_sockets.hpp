// peer_sockets: this process's TCP sockets connected to one peer, as the kernel lists them
// (/proc/self/fd), and a way to end those a failed connect left behind. CAF 0.17.6's middleman
// keeps the socket of a handshake it gave up on (connection_timeout) registered for writing while
// its TLS handshake waits for the peer: its multiplexer thread spins on it, and ~actor_system
// waits for it, until the peer closes. Shutting such a socket down (not closing it: the middleman
// still owns the descriptor) makes its TLS read see the end of the stream, and the middleman then
// drops it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>

namespace ag {

class peer_sockets {
public:
  // The sockets connected to HOST:PORT now (HOST as a name or an address; every address it
  // resolves to counts). A HOST that does not resolve has none.
  peer_sockets(const std::string& host, uint16_t port);

  // Shuts down, both ways, every socket connected to the peer now that was not when this was
  // made (another connection of this process to the same peer, made before, is left as it is).
  // How many it shut down. Never throws.
  std::size_t shut_down_new() const noexcept;

private:
  // Each socket by its descriptor and local address ("fd address:port").
  std::set<std::string> connected() const;

  std::set<std::string> peers_; // the peer's addresses, "address:port"
  std::set<std::string> before_;
};

} // namespace ag
