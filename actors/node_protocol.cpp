#include "actors/node_protocol.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caf/actor_system_config.hpp>
#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>

#include "actorgraph/error.hpp"
#include "actors/tls_error_queue.hpp"
#include "graph/deadline.hpp"
#include "ipc/identity.hpp"

namespace ag {

namespace {

// The longest time between two heartbeats of either side.
constexpr caf::timespan max_heartbeat{std::chrono::milliseconds{200}};

} // namespace

void check_tls_guard() {
  if (!tls_error_queue_guarded())
    throw error("this program loads libssl before libactorgraph, so CAF's TLS calls miss the "
                "guard that keeps one failed connection from closing the others "
                "(actors/tls_error_queue.hpp): link actorgraph before OpenSSL");
}

void configure_node_network(caf::actor_system_config& cfg, const identity& self,
                            const std::string& trust_file, std::chrono::milliseconds timeout) {
  check_tls_guard();
  cfg.load<caf::io::middleman>();
  cfg.load<caf::openssl::manager>();
  cfg.add_message_type<node_request>("ag::node_request");
  cfg.openssl_certificate = self.pub.path;
  cfg.openssl_key = self.secret_path;
  cfg.openssl_cafile = trust_file;
  // The peer's timeout is its own (a controller's node_timeout, ag-node's --timeout-ms): beat
  // often enough for any of a second or more, whatever this side's.
  caf::timespan beat = max_heartbeat;
  if (!no_deadline(timeout)) {
    const auto span = std::chrono::duration_cast<caf::timespan>(timeout);
    beat = std::min(beat, caf::timespan{span / 5});
    cfg.set("middleman.connection-timeout", span);
  }
  cfg.set("middleman.heartbeat-interval", beat);
  cfg.set("middleman.app-identifiers", std::vector<std::string>{"actorgraph-node-1"});
}

void write_trust_file(const std::string& path, const std::vector<std::string>& public_files) {
  std::string text;
  for (const auto& f : public_files) {
    std::ifstream in{f};
    if (!in)
      throw error("identity " + f + ": cannot read it");
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    text += '\n';
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    throw error("trust file " + path + ": cannot create it");
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok)
    throw error("trust file " + path + ": cannot write it");
}

std::pair<std::string, uint16_t> parse_tcp_endpoint(const std::string& text,
                                                    const std::string& what) {
  const std::string scheme = "tcp://";
  auto bad = [&](const std::string& why) {
    return error(what + " \"" + text + "\": " + why + " (expected tcp://HOST:PORT)");
  };
  if (text.compare(0, scheme.size(), scheme) != 0)
    throw bad("not a tcp:// endpoint");
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon < scheme.size())
    throw bad("no port");
  const std::string host = text.substr(scheme.size(), colon - scheme.size());
  const std::string port = text.substr(colon + 1);
  if (host.empty())
    throw bad("no host");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos
      || std::stoul(port) > 65535)
    throw bad("port \"" + port + "\" is not a number from 0 to 65535");
  return {host, static_cast<uint16_t>(std::stoul(port))};
}

} // namespace ag
