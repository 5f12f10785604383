#include "ipc/zmq_sockets.hpp"

#include <algorithm>
#include <cstring>

#include <unistd.h>

#include "actorgraph/error.hpp"

namespace ag::zmqs {

namespace {

zmq::socket_t make(zmq::context_t& ctx, zmq::socket_type type, int linger_ms) {
  zmq::socket_t s{ctx, type};
  s.set(zmq::sockopt::linger, linger_ms);
  return s;
}

void receiving(zmq::socket_t& s) {
  s.set(zmq::sockopt::rcvhwm, 0);
  s.set(zmq::sockopt::maxmsgsize, wire::max_frame_bytes);
}

void pin(zmq::socket_t& s, int io_thread) {
  if (io_thread >= 0)
    s.set(zmq::sockopt::affinity, uint64_t{1} << (io_thread % 64));
}

// Before bind or connect: the options apply to the endpoints made after them.
void secure(zmq::socket_t& s, const curve_keys* curve) {
  if (curve == nullptr)
    return;
  s.set(zmq::sockopt::curve_secretkey, curve->secret_key);
  s.set(zmq::sockopt::curve_publickey, curve->public_key);
  if (curve->server_key.empty()) {
    s.set(zmq::sockopt::curve_server, true);
    s.set(zmq::sockopt::zap_domain, zap_domain);
  } else {
    s.set(zmq::sockopt::curve_serverkey, curve->server_key);
  }
  s.set(zmq::sockopt::tcp_keepalive, 1);
}

// A local endpoint (ipc://, abstract: no file, so no directory's mode guards it) lets in only
// processes of this user: the kernel's credentials of each connection (SO_PEERCRED) are checked
// before a byte is read.
void only_this_user(zmq::socket_t& s, const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) != 0)
    return;
  const int uid = static_cast<int>(::getuid());
  if (zmq_setsockopt(s.handle(), ZMQ_IPC_FILTER_UID, &uid, sizeof uid) != 0)
    throw zmq::error_t{};
}

} // namespace

zmq::socket_t publisher(zmq::context_t& ctx, const std::string& endpoint,
                        const curve_keys* curve, int io_thread) {
  auto s = make(ctx, zmq::socket_type::pub, 0);
  s.set(zmq::sockopt::sndhwm, 0);
  pin(s, io_thread);
  secure(s, curve);
  only_this_user(s, endpoint);
  s.bind(endpoint);
  return s;
}

zmq::socket_t gated_publisher(zmq::context_t& ctx, const std::string& endpoint,
                              const curve_keys* curve, int io_thread) {
  auto s = make(ctx, zmq::socket_type::xpub, 0);
  s.set(zmq::sockopt::sndhwm, 0);
  s.set(zmq::sockopt::xpub_manual, 1);
  receiving(s); // what it reads: subscriptions
  pin(s, io_thread);
  secure(s, curve);
  s.bind(endpoint);
  return s;
}

zmq::socket_t puller(zmq::context_t& ctx, const std::string& endpoint, const curve_keys* curve,
                     int io_thread) {
  auto s = make(ctx, zmq::socket_type::pull, 0);
  receiving(s);
  pin(s, io_thread);
  secure(s, curve);
  only_this_user(s, endpoint);
  s.bind(endpoint);
  return s;
}

zmq::socket_t subscriber(zmq::context_t& ctx, const std::string& endpoint,
                         const curve_keys* curve, const std::vector<std::string>& prefixes,
                         int io_thread) {
  auto s = make(ctx, zmq::socket_type::sub, 0);
  receiving(s);
  pin(s, io_thread);
  for (const auto& p : prefixes)
    s.set(zmq::sockopt::subscribe, p);
  secure(s, curve);
  s.connect(endpoint);
  return s;
}

zmq::socket_t pusher(zmq::context_t& ctx, const std::string& endpoint, const curve_keys* curve,
                     int io_thread) {
  // A child's last acknowledgements must still leave after it closed the socket on exit; bounded,
  // so a controller that is gone cannot hold the child.
  auto s = make(ctx, zmq::socket_type::push, 1000);
  s.set(zmq::sockopt::sndhwm, 0);
  pin(s, io_thread);
  secure(s, curve);
  s.connect(endpoint);
  return s;
}

bool readable(zmq::socket_t& sock) { return (sock.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0; }

uint16_t bound_port(zmq::socket_t& sock) {
  const std::string at = sock.get(zmq::sockopt::last_endpoint);
  const auto colon = at.rfind(':');
  if (colon == std::string::npos)
    throw error("socket bound at " + at + ": no port");
  return static_cast<uint16_t>(std::stoul(at.substr(colon + 1)));
}

std::vector<zmq::socket_t*> wait_any(const std::vector<zmq::socket_t*>& socks) {
  std::vector<zmq::pollitem_t> items;
  for (auto* s : socks)
    items.push_back({s->handle(), 0, ZMQ_POLLIN, 0});
  std::vector<zmq::socket_t*> ready;
  if (zmq::poll(items.data(), items.size(), drain_wait) == 0)
    return ready;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (items[i].revents & ZMQ_POLLIN)
      ready.push_back(socks[i]);
  return ready;
}

std::string received::user() const {
  const char* u = zmq_msg_gets(body.handle(), "User-Id");
  return u ? u : "";
}

void send_data(const std::vector<zmq::socket_t*>& socks, wire::msg_type type, uint32_t lane,
               uint64_t& next_id, uint64_t offset, const char* data, std::size_t size) {
  std::size_t at = 0;
  do { // an empty range still sends one frame: nothing waits for bytes that never come
    zmq::socket_t& sock = *socks[(next_id - 1) % socks.size()];
    const std::size_t n = std::min(wire::max_data_piece, size - at);
    const auto head = wire::encode_header({type, next_id++, lane});
    char where[wire::data_offset_bytes];
    wire::encode_data_offset(where, offset + at);
    // The bytes straight from the store: the range stays as it is until the batch that reads it
    // (Data-in) or the Done behind it (Data-out) is acknowledged, which is after they were sent.
    zmq::message_t bytes(const_cast<char*>(data + at), n, [](void*, void*) {}, nullptr);
    sock.send(zmq::buffer(head), zmq::send_flags::sndmore);
    sock.send(zmq::buffer(where, sizeof where), zmq::send_flags::sndmore);
    sock.send(bytes, zmq::send_flags::none);
    at += n;
  } while (at < size);
}

void send(zmq::socket_t& sock, const wire::header& h, const wire::bytes& body) {
  const auto head = wire::encode_header(h);
  sock.send(zmq::buffer(head), zmq::send_flags::sndmore);
  sock.send(zmq::buffer(body), zmq::send_flags::none);
}

std::optional<received> receive(zmq::socket_t& sock, std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0)
    return std::nullopt;
  zmq::message_t head;
  if (!sock.recv(head, zmq::recv_flags::dontwait))
    return std::nullopt;
  auto drain = [&] {
    zmq::message_t rest;
    while (sock.get(zmq::sockopt::rcvmore))
      (void)sock.recv(rest, zmq::recv_flags::dontwait);
  };
  if (!head.more()) {
    throw error("wire: a message of one frame (" + std::to_string(head.size())
                + " bytes); expected a header and a body");
  }
  received r;
  try {
    r.head = wire::decode_header(head.data(), head.size());
  } catch (...) {
    drain();
    throw;
  }
  (void)sock.recv(r.body, zmq::recv_flags::dontwait);
  if (wire::carries_data(r.head.type)) { // header, offset, bytes
    if (!r.body.more())
      throw error("wire: " + wire::to_string(r.head.type) + " message of two frames, expected 3");
    (void)sock.recv(r.data, zmq::recv_flags::dontwait);
  }
  if ((wire::carries_data(r.head.type) ? r.data : r.body).more()) {
    drain();
    throw error("wire: " + wire::to_string(r.head.type) + " message with more than "
                + (wire::carries_data(r.head.type) ? "three" : "two") + " frames");
  }
  return r;
}

} // namespace ag::zmqs
