#include "ipc/zmq_sockets.hpp"

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

} // namespace

zmq::socket_t publisher(zmq::context_t& ctx, const std::string& endpoint) {
  auto s = make(ctx, zmq::socket_type::pub, 0);
  s.set(zmq::sockopt::sndhwm, 0);
  s.bind(endpoint);
  return s;
}

zmq::socket_t puller(zmq::context_t& ctx, const std::string& endpoint) {
  auto s = make(ctx, zmq::socket_type::pull, 0);
  receiving(s);
  s.bind(endpoint);
  return s;
}

zmq::socket_t subscriber(zmq::context_t& ctx, const std::string& endpoint) {
  auto s = make(ctx, zmq::socket_type::sub, 0);
  receiving(s);
  s.set(zmq::sockopt::subscribe, "");
  s.connect(endpoint);
  return s;
}

zmq::socket_t pusher(zmq::context_t& ctx, const std::string& endpoint) {
  // A child's last acknowledgements must still leave after it closed the socket on exit; bounded,
  // so a controller that is gone cannot hold the child.
  auto s = make(ctx, zmq::socket_type::push, 1000);
  s.set(zmq::sockopt::sndhwm, 0);
  s.connect(endpoint);
  return s;
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
  if (r.body.more()) {
    drain();
    throw error("wire: " + wire::to_string(r.head.type) + " message with more than two frames");
  }
  return r;
}

} // namespace ag::zmqs
