#include "ipc/zap_handler.hpp"

#include <cstdio>
#include <cstring>
#include <vector>

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
  : allowed_(std::move(allowed)), log_(std::move(log)), ctx_(&ctx) {
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
    delete static_cast<zmq::socket_t*>(m.first);
  for (auto& m : added_)
    delete static_cast<zmq::socket_t*>(m.first);
}

void zap_handler::watch(zmq::socket_t& server, const std::string& what) {
  static std::atomic<int> next{0};
  const std::string at = "inproc://ag-handshakes-" + std::to_string(next++);
  if (zmq_socket_monitor(server.handle(), at.c_str(),
                         ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL)
      != 0)
    throw error("ZAP handler: cannot watch the " + what + " socket: " + zmq_strerror(errno));
  auto* pair = new zmq::socket_t{*ctx_, zmq::socket_type::pair};
  pair->set(zmq::sockopt::linger, 0);
  pair->connect(at);
  std::lock_guard<std::mutex> guard{mutex_};
  added_.emplace_back(pair, what);
}

void zap_handler::take_event(void* raw, const std::string& what) {
  auto& m = *static_cast<zmq::socket_t*>(raw);
  zmq::message_t event;
  zmq::message_t address;
  if (!m.recv(event, zmq::recv_flags::dontwait))
    return;
  if (!event.more() || !m.recv(address, zmq::recv_flags::dontwait))
    return;
  uint16_t id = 0;
  uint32_t value = 0;
  if (event.size() >= 6) {
    std::memcpy(&id, event.data(), 2);
    std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
  }
  ++refused_;
  if (log_) {
    char code[16];
    std::snprintf(code, sizeof code, "0x%x", value);
    log_("refused a peer from " + address.to_string() + " on the " + what + " socket: "
         + (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
              ? std::string{"its handshake broke the protocol (plaintext, or not CURVE: error "}
                  + code + ")"
              : std::string{"its handshake failed"}));
  }
}

void zap_handler::run(void* raw) {
  auto& sock = *static_cast<zmq::socket_t*>(raw);
  while (!stop_) {
    {
      std::lock_guard<std::mutex> guard{mutex_};
      monitors_.insert(monitors_.end(), added_.begin(), added_.end());
      added_.clear();
    }
    std::vector<zmq::pollitem_t> items{{sock.handle(), 0, ZMQ_POLLIN, 0}};
    for (auto& m : monitors_)
      items.push_back({static_cast<zmq::socket_t*>(m.first)->handle(), 0, ZMQ_POLLIN, 0});
    if (zmq::poll(items.data(), items.size(), std::chrono::milliseconds{50}) == 0)
      continue;
    for (std::size_t i = 1; i < items.size(); ++i)
      if (items[i].revents & ZMQ_POLLIN)
        take_event(monitors_[i - 1].first, monitors_[i - 1].second);
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
      if (log_)
        log_("refused a peer from " + (address.empty() ? std::string{"?"} : address) + ": "
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
