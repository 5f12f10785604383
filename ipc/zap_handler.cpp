#include "ipc/zap_handler.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <zmq.hpp>

#include "actorgraph/error.hpp"

namespace ag {

namespace {

constexpr const char* zap_endpoint = "inproc://zeromq.zap.01";

std::string z85_of(const zmq::message_t& key) {
  if (key.size() != 32)
    return {};
  char out[41];
  if (zmq_z85_encode(out, static_cast<const uint8_t*>(key.data()), 32) == nullptr)
    return {};
  return out;
}

} // namespace

zap_handler::zap_handler(zmq::context_t& ctx, std::map<std::string, std::string> allowed,
                         std::function<void(const std::string&)> log)
  : allowed_(std::move(allowed)), log_(std::move(log), "refused peers"), ctx_(&ctx) {
  auto* sock = new zmq::socket_t{ctx, zmq::socket_type::rep};
  try {
    sock->set(zmq::sockopt::linger, 0);
    sock->bind(zap_endpoint); // now, on the caller's thread: before any CURVE socket binds
  } catch (const zmq::error_t& e) {
    delete sock;
    throw error(std::string{"ZAP handler: cannot bind "} + zap_endpoint + ": " + e.what());
  }
  sock_ = sock;
  thread_ = std::thread{[this, sock] { run(sock); }};
}

zap_handler::~zap_handler() {
  stop_ = true;
  thread_.join();
  delete static_cast<zmq::socket_t*>(sock_);
  for (auto& m : monitors_)
    delete static_cast<zmq::socket_t*>(m.monitor);
  for (auto& m : added_)
    delete static_cast<zmq::socket_t*>(m.monitor);
}

void zap_handler::watch(zmq::socket_t& server, const std::string& what) {
  static std::atomic<int> next{0};
  const std::string at = "inproc://ag-handshakes-" + std::to_string(next++);
  const int events = ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_SUCCEEDED
                     | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
                     | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
  if (zmq_socket_monitor(server.handle(), at.c_str(), events) != 0)
    throw error("ZAP handler: cannot watch the " + what + " socket: " + zmq_strerror(errno));
  auto* pair = new zmq::socket_t{*ctx_, zmq::socket_type::pair};
  pair->set(zmq::sockopt::linger, 0);
  pair->connect(at);
  std::lock_guard<std::mutex> guard{mutex_};
  watched w;
  w.monitor = pair;
  w.what = what;
  added_.push_back(std::move(w));
}

namespace {

// "tcp://1.2.3.4:5678" of the connection on `fd`; "an address gone before it was read" once
// the connection is closed (a handshake that fails at once can close it before its accept
// event is read here).
std::string peer_of(int fd) {
  const std::string gone = "an address gone before it was read";
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return gone;
  char host[INET6_ADDRSTRLEN] = {0};
  uint16_t port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* in = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    port = ntohs(in->sin6_port);
  } else {
    return gone;
  }
  return std::string{"tcp://"} + host + ":" + std::to_string(port);
}

} // namespace

// A connection is refused when it goes before its handshake succeeded: logged then, with the
// address it was accepted from and why its handshake failed (a failure event names no connection:
// it is the reason of every connection then still in its handshake).
void zap_handler::take_event(watched& w) {
  auto& m = *static_cast<zmq::socket_t*>(w.monitor);
  zmq::message_t event;
  zmq::message_t address;
  if (!m.recv(event, zmq::recv_flags::dontwait))
    return;
  if (!event.more() || !m.recv(address, zmq::recv_flags::dontwait) || event.size() < 6)
    return;
  uint16_t id = 0;
  uint32_t value = 0;
  std::memcpy(&id, event.data(), 2);
  std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
  const int fd = static_cast<int>(value);
  switch (id) {
    case ZMQ_EVENT_ACCEPTED:
      w.connections[fd] = {peer_of(fd), "", false};
      return;
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: // the oldest in its handshake, as good as any: none is
      for (auto it = w.connections.begin(); it != w.connections.end(); ++it)
        if (it->second.failure.empty()) {
          w.connections.erase(it);
          return;
        }
      return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: {
      char code[16];
      std::snprintf(code, sizeof code, "0x%x", value);
      const std::string why =
        id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
          ? std::string{"its handshake broke the protocol (plaintext, the wrong server key, or not "
                        "CURVE: error "}
              + code + ")"
          : id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? "its key was refused"
                                                  : "its handshake failed";
      for (auto& [_, c] : w.connections)
        if (c.failure.empty()) {
          c.failure = why;
          c.told = id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH; // the ZAP request said who and why
        }
      return;
    }
    case ZMQ_EVENT_DISCONNECTED: {
      const auto it = w.connections.find(fd);
      if (it == w.connections.end())
        return;
      const auto c = it->second;
      w.connections.erase(it);
      if (c.told)
        return;
      ++refused_;
      log_.line("refused a peer from " + c.peer + " on the " + w.what + " socket: "
                + (c.failure.empty() ? "it left before its handshake completed" : c.failure));
      return;
    }
    default:
      return;
  }
}

void zap_handler::run(void* raw) {
  auto& sock = *static_cast<zmq::socket_t*>(raw);
  while (!stop_) {
    log_.tick(); // the summary of a flood that stopped
    {
      std::lock_guard<std::mutex> guard{mutex_};
      for (auto& w : added_)
        monitors_.push_back(std::move(w));
      added_.clear();
    }
    std::vector<zmq::pollitem_t> items{{sock.handle(), 0, ZMQ_POLLIN, 0}};
    for (auto& m : monitors_)
      items.push_back({static_cast<zmq::socket_t*>(m.monitor)->handle(), 0, ZMQ_POLLIN, 0});
    if (zmq::poll(items.data(), items.size(), std::chrono::milliseconds{50}) == 0)
      continue;
    for (std::size_t i = 1; i < items.size(); ++i)
      if (items[i].revents & ZMQ_POLLIN)
        take_event(monitors_[i - 1]);
    if (!(items[0].revents & ZMQ_POLLIN))
      continue;
    // version, request id, domain, address, identity, mechanism, credentials...
    std::vector<zmq::message_t> frames;
    do {
      zmq::message_t m;
      if (!sock.recv(m, zmq::recv_flags::dontwait))
        break;
      frames.emplace_back(std::move(m));
    } while (frames.back().more());
    if (frames.size() < 6)
      continue; // not a ZAP request: no answer is owed
    const std::string request_id = frames[1].to_string();
    const std::string address = frames[3].to_string();
    const std::string mechanism = frames[5].to_string();
    std::string status = "400";
    std::string text;
    std::string user;
    if (frames[0].to_string() != "1.0") {
      status = "500";
      text = "ZAP version " + frames[0].to_string();
    } else if (mechanism != "CURVE") {
      text = "mechanism " + mechanism + ", not CURVE";
    } else if (frames.size() < 7) {
      text = "no CURVE key";
    } else {
      const std::string key = z85_of(frames[6]);
      if (auto it = allowed_.find(key); it != allowed_.end()) {
        status = "200";
        text = "OK";
        user = it->second;
      } else {
        text = "CURVE key " + key + " is not allowed";
      }
    }
    if (status != "200") {
      ++refused_;
      log_.line("refused a peer from " + (address.empty() ? std::string{"?"} : address) + ": "
                + text);
    }
    const std::string version = "1.0";
    sock.send(zmq::buffer(version), zmq::send_flags::sndmore);
    sock.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    sock.send(zmq::buffer(status), zmq::send_flags::sndmore);
    sock.send(zmq::buffer(text), zmq::send_flags::sndmore);
    sock.send(zmq::buffer(user), zmq::send_flags::sndmore);
    sock.send(zmq::message_t{}, zmq::send_flags::none); // no metadata
  }
}

} // namespace ag
