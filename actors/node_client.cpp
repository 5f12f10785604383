#include "actors/node_client.hpp"

#include <cstring>
#include <cstdio>
#include <optional>
#include <random>
#include <set>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/openssl/manager.hpp>

#include "actorgraph/error.hpp"
#include "actors/node_protocol.hpp"
#include "actors/peer_sockets.hpp"
#include "graph/deadline.hpp"
#include "ipc/identity.hpp"

namespace ag {

namespace {

caf::duration timeout_of(std::chrono::milliseconds t) {
  return no_deadline(t) ? caf::infinite : caf::duration{t};
}

// How many times a node's connection is asked of the middleman, at most.
constexpr int max_connect_attempts = 3;

// The node's actor, through TLS, by `timeout`. CAF 0.17's middleman drops a connection whose
// handshake has not answered by its next heartbeat tick with connection_timeout (seen on a loaded
// machine while a second node's TLS handshake ran): such an attempt is made again, within the
// same deadline, once the node answered a probe again. The sockets of a failed attempt are shut
// down: the middleman keeps a dropped handshake's socket, spinning on it until the peer closes.
node_actor connect(caf::actor_system& sys, const network_setup::node_target& n,
                   std::chrono::milliseconds timeout, const node_reprobe& reprobe) {
  const std::string who = "node " + n.name + " (tcp://" + n.host + ":" + std::to_string(n.port) + ")";
  const auto deadline = deadline_after(timeout);
  caf::scoped_actor self{sys};
  for (int attempt = 1;; ++attempt) {
    caf::strong_actor_ptr found;
    caf::error failure;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{}));
    const auto wait = timeout_of(no_deadline(timeout) ? timeout : left);
    const peer_sockets before{n.host, n.port};
    self->request(sys.openssl_manager().actor_handle(), wait, caf::connect_atom::value, n.host,
                  n.port)
      .receive(
        [&](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>&) {
          found = std::move(ptr);
        },
        [&](caf::error& err) { failure = std::move(err); });
    if (failure)
      before.shut_down_new();
    if (failure == caf::sec::connection_timeout && attempt < max_connect_attempts
        && std::chrono::steady_clock::now() < deadline) {
      reprobe(n, deadline);
      continue;
    }
    if (failure)
      throw error(describe(failure, who + ": connecting"
                                      + (attempt > 1 ? " (attempt " + std::to_string(attempt)
                                                         + ", the others dropped unanswered)"
                                                     : std::string{}))
                  + " (is its ag-node running, and does it allow this controller's key?)");
    if (!found)
      throw error(who + ": no actor is published there");
    return caf::actor_cast<node_actor>(found);
  }
}

// 32 random bytes from std::random_device, in lowercase hex.
std::string fresh_nonce() {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < 8; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
    out += buf;
  }
  return out;
}

// The node that answered on n's connection signs a fresh proof with its TLS key, which must be
// the key of n's .public: TLS alone takes any listed node for any other.
void prove_identity(caf::scoped_actor& self, const node_actor& node,
                    const network_setup::node_target& n, std::chrono::milliseconds timeout) {
  const std::string who = "node " + n.name + " (tcp://" + n.host + ":" + std::to_string(n.port) + ")";
  const auto peer = load_public(n.public_file);
  const auto nonce = fresh_nonce();
  std::optional<std::string> why;
  std::string signature;
  self->request(node, timeout_of(timeout), node_prove_atom::value, nonce)
    .receive([&](std::string& sig) { signature = std::move(sig); },
             [&](caf::error& err) { why = describe(err, who + ": proof of identity"); });
  if (why)
    throw error(*why);
  if (!proof_holds(peer, proof_text(n.name, nonce), signature))
    throw error(who + ": the node that answered there could not prove it holds the key of "
                + n.public_file + " (another node at that address, or another name for it)");
}

} // namespace

std::map<uint32_t, node_lane>
start_node_lanes(caf::actor_system& sys, const caf::actor& owner, const network_setup& net,
                 const std::vector<device>& devices, uint64_t store_bytes,
                 std::chrono::milliseconds start_timeout, std::chrono::milliseconds stop_timeout,
                 const node_reprobe& reprobe, const step_policy& steps, uint32_t max_restarts) {
  std::map<uint32_t, node_lane> out;
  for (const auto& n : net.nodes) {
    node_request req;
    req.owner = owner;
    req.controller_host = n.controller_host;
    req.pub_port = net.pub_port;
    req.pull_port = net.pull_port;
    req.data_ports = net.data_ports;
    req.return_ports = net.return_ports;
    req.controller_key = net.curve_public;
    req.store_bytes = store_bytes;
    req.start_timeout_ms = no_deadline(start_timeout) ? INT64_MAX : start_timeout.count();
    req.stop_timeout_ms = no_deadline(stop_timeout) ? INT64_MAX : stop_timeout.count();
    req.graphs = steps.enabled;
    req.max_graphs = steps.max_graphs;
    req.graph_after = steps.capture_after;
    req.max_restarts = max_restarts;
    for (uint32_t lane = 0; lane < devices.size(); ++lane)
      if (!devices[lane].local() && devices[lane].node_name() == n.name) {
        req.lanes.push_back(lane);
        req.devices.push_back(devices[lane].on_its_node());
      }
    if (req.lanes.empty())
      continue;
    auto node = connect(sys, n, start_timeout, reprobe);
    caf::scoped_actor self{sys};
    prove_identity(self, node, n, start_timeout);
    std::optional<std::string> why;
    std::vector<caf::actor> proxies;
    self->request(node, timeout_of(start_timeout), node_start_atom::value, std::move(req))
      .receive([&](std::vector<caf::actor>& xs) { proxies = std::move(xs); },
               [&](caf::error& err) { why = describe(err, "node " + n.name + ": start"); });
    if (why)
      throw error(*why);
    std::size_t i = 0;
    for (uint32_t lane = 0; lane < devices.size(); ++lane)
      if (!devices[lane].local() && devices[lane].node_name() == n.name) {
        if (i >= proxies.size() || !proxies[i])
          throw error("node " + n.name + " answered " + std::to_string(proxies.size())
                      + " children for more lanes");
        out[lane] = node_lane{caf::actor_cast<runner_proxy_actor>(proxies[i++]),
                              caf::actor_cast<caf::actor>(node)};
      }
  }
  return out;
}

std::string local_address_towards(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    throw error("node host " + host + ": " + ::gai_strerror(rc));
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  std::string out;
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char text[INET_ADDRSTRLEN] = {0};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0
        && ::inet_ntop(AF_INET, &me.sin_addr, text, sizeof text) != nullptr)
      out = text;
  }
  const int err = errno;
  if (fd >= 0)
    ::close(fd);
  ::freeaddrinfo(found);
  if (out.empty())
    throw error("node host " + host + ": no route from this machine (" + std::strerror(err) + ")");
  return out;
}

} // namespace ag
