#include "actors/peer_sockets.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

namespace ag {

namespace {

// "address:port" of a socket address; an IPv4 address mapped into IPv6 (a dual-stack socket's
// peer) as the IPv4 one. Empty for other families.
std::string text_of(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    return std::string{text} + ":" + std::to_string(ntohs(in.sin_port));
  }
  if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr))
      ::inet_ntop(AF_INET, &in6.sin6_addr.s6_addr[12], text, sizeof text);
    else
      ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    return std::string{text} + ":" + std::to_string(ntohs(in6.sin6_port));
  }
  return {};
}

// The descriptors of this process that are sockets connected to one of `peers`, each with its
// local address, by `visit(fd, "fd local")`.
template <class F>
void for_each_connected(const std::set<std::string>& peers, F visit) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr)
    return;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    const int fd = std::atoi(e->d_name);
    struct stat st {};
    if (fd == ::dirfd(dir) || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
      continue;
    sockaddr_storage peer{}, local{};
    socklen_t len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0
        || !peers.count(text_of(peer)))
      continue;
    len = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0)
      continue;
    visit(fd, std::to_string(fd) + " " + text_of(local));
  }
  ::closedir(dir);
}

} // namespace

peer_sockets::peer_sockets(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0)
    return;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    sockaddr_storage s{};
    std::memcpy(&s, a->ai_addr, std::min<std::size_t>(a->ai_addrlen, sizeof s));
    if (auto t = text_of(s); !t.empty())
      peers_.insert(std::move(t));
  }
  ::freeaddrinfo(found);
  before_ = connected();
}

std::set<std::string> peer_sockets::connected() const {
  std::set<std::string> out;
  for_each_connected(peers_, [&](int, std::string id) { out.insert(std::move(id)); });
  return out;
}

std::size_t peer_sockets::shut_down_new() const noexcept {
  std::size_t n = 0;
  try {
    for_each_connected(peers_, [&](int fd, const std::string& id) {
      if (!before_.count(id) && ::shutdown(fd, SHUT_RDWR) == 0)
        ++n;
    });
  } catch (...) { // out of memory for a string: what was shut down stays so
  }
  return n;
}

} // namespace ag
