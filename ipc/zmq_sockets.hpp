// The ZMQ sockets of the controller and its children, configured in one place (high-water marks,
// linger, ZMQ_MAXMSGSIZE), and the two-frame send/receive of the wire format. Each socket is used
// by exactly one actor.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "ipc/wire.hpp"

namespace ag::zmqs {

// Controller: PUB bound at `endpoint`, no send-queue limit (sndhwm = 0: a slow child holds memory,
// never loses a message).
zmq::socket_t publisher(zmq::context_t& ctx, const std::string& endpoint);
// Controller: PULL bound at `endpoint`.
zmq::socket_t puller(zmq::context_t& ctx, const std::string& endpoint);
// Child: SUB connected to `endpoint`, subscribed to everything.
zmq::socket_t subscriber(zmq::context_t& ctx, const std::string& endpoint);
// Child: PUSH connected to `endpoint`.
zmq::socket_t pusher(zmq::context_t& ctx, const std::string& endpoint);

void send(zmq::socket_t& sock, const wire::header& h, const wire::bytes& body);

struct received {
  wire::header head;
  zmq::message_t body;
};

// Waits up to `timeout` for one message. Nothing arrived: empty. A message that is not a header
// frame followed by exactly one body frame: ag::error naming what was wrong (every frame of it has
// been consumed).
std::optional<received> receive(zmq::socket_t& sock, std::chrono::milliseconds timeout);

} // namespace ag::zmqs
