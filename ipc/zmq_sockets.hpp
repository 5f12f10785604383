// The ZMQ sockets of the controller and its children, configured in one place (high-water marks,
// linger, ZMQ_MAXMSGSIZE), and the two-frame send/receive of the wire format. Each socket is used
// by exactly one actor.
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <utility>

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

// How long a drain waits when nothing is there: the latency with which the socket's actor notices
// an exit request, not that of a message (a message ends the wait at once).
constexpr std::chrono::milliseconds drain_wait{50};
// The most messages one drain takes, so that an exit request is still noticed under load.
constexpr int drain_limit = 1024;

// Receives what `sock` holds and hands each message to `handle`: up to drain_limit messages,
// waiting up to drain_wait for the first and not at all for the others. An exception from a
// receive or from `handle` goes to `on_error` (inside the catch, so that `throw;` rethrows it),
// and the drain goes on with the next message.
template <class Handle, class OnError>
void drain(zmq::socket_t& sock, Handle&& handle, OnError&& on_error) {
  auto timeout = drain_wait;
  for (int i = 0; i < drain_limit; ++i) {
    try {
      auto r = receive(sock, timeout);
      if (!r)
        return;
      handle(*r);
    } catch (const std::exception& e) {
      on_error(e);
    }
    timeout = std::chrono::milliseconds{0};
  }
}

// The same, except that the first exception ends the drain and propagates.
template <class Handle>
void drain(zmq::socket_t& sock, Handle&& handle) {
  drain(sock, std::forward<Handle>(handle), [](const std::exception&) { throw; });
}

} // namespace ag::zmqs
