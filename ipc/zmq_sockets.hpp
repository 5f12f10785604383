// The ZMQ sockets of the controller and its children, configured in one place (high-water marks,
// linger, ZMQ_MAXMSGSIZE), and the two-frame send/receive of the wire format. Each socket is used
// by exactly one actor.
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "ipc/wire.hpp"

namespace ag::zmqs {

// CURVE on a socket over TCP (a node's children and their controller): encrypted, and each side
// proves it holds its secret key. A server (the controller's sockets, which bind) lets in the
// clients its ZAP handler allows (ipc/zap_handler.hpp), which must be running before it binds. A
// client (a node's child, which connects) names the server's public key. Keys in Z85.
struct curve_keys {
  std::string public_key;
  std::string secret_key;
  std::string server_key; // a client's: the server's public key; empty: this side is the server
};

// The ZAP domain of the controller's CURVE sockets.
constexpr const char* zap_domain = "actorgraph";

// `io_thread` (for PUB, SUB, PUSH and PULL): which I/O thread of the context carries the socket's connections
// (ZMQ_AFFINITY); -1: libzmq's choice. libzmq puts connections made together on one thread, so
// data streams that should encrypt side by side name theirs.

// Controller: PUB bound at `endpoint`, no send-queue limit (sndhwm = 0: a slow child holds memory,
// never loses a message).
zmq::socket_t publisher(zmq::context_t& ctx, const std::string& endpoint,
                        const curve_keys* curve = nullptr, int io_thread = -1);
// Controller: the same, as an XPUB in manual mode: a subscription applies only once the owner
// takes it from the socket and allows it (actors/subscription_gate.hpp). For the nodes' sockets.
zmq::socket_t gated_publisher(zmq::context_t& ctx, const std::string& endpoint,
                              const curve_keys* curve = nullptr, int io_thread = -1);
// Controller: PULL bound at `endpoint`.
zmq::socket_t puller(zmq::context_t& ctx, const std::string& endpoint,
                     const curve_keys* curve = nullptr, int io_thread = -1);
// Child: SUB connected to `endpoint`, subscribed to the messages whose header frames begin with
// one of `prefixes` (by default everything).
zmq::socket_t subscriber(zmq::context_t& ctx, const std::string& endpoint,
                         const curve_keys* curve = nullptr,
                         const std::vector<std::string>& prefixes = {std::string{}},
                         int io_thread = -1);
// Child: PUSH connected to `endpoint`.
zmq::socket_t pusher(zmq::context_t& ctx, const std::string& endpoint,
                     const curve_keys* curve = nullptr, int io_thread = -1);

// Whether a message waits on `sock` now (ZMQ_EVENTS), without taking it.
bool readable(zmq::socket_t& sock);

// The TCP port a socket bound to "tcp://HOST:0" was given.
uint16_t bound_port(zmq::socket_t& sock);

void send(zmq::socket_t& sock, const wire::header& h, const wire::bytes& body);

// Sends bytes [data, data + size) of the store at `offset` as Data-in or Data-out frames of `lane`,
// wire::max_data_piece at a time; `next_id` numbers them (Data-in: the lane's own sequence). Over
// several sockets (data streams), piece id i goes on socks[(i - 1) % socks.size()].
void send_data(const std::vector<zmq::socket_t*>& socks, wire::msg_type type, uint32_t lane,
               uint64_t& next_id, uint64_t offset, const char* data, std::size_t size);
inline void send_data(zmq::socket_t& sock, wire::msg_type type, uint32_t lane, uint64_t& next_id,
                      uint64_t offset, const char* data, std::size_t size) {
  send_data(std::vector<zmq::socket_t*>{&sock}, type, lane, next_id, offset, data, size);
}

struct received {
  wire::header head;
  zmq::message_t body; // Data-in, Data-out: the offset frame
  zmq::message_t data; // Data-in, Data-out: the bytes; empty for every other message
  // Who sent it, as the ZAP handler named it (CURVE sockets only; empty otherwise).
  std::string user() const;
};

// Waits up to `timeout` for one message. Nothing arrived: empty. A message that is not a header
// frame followed by exactly one body frame: ag::error naming what was wrong (every frame of it has
// been consumed).
std::optional<received> receive(zmq::socket_t& sock, std::chrono::milliseconds timeout);

// How long a drain waits when nothing is there: the latency with which the socket's actor notices
// an exit request, not that of a message (a message ends the wait at once). Each slice is a
// wake-up of an idle runtime (docs/BENCHMARKS.md, idle CPU).
constexpr std::chrono::milliseconds drain_wait{100};
// The most messages one drain takes, so that an exit request is still noticed under load.
constexpr int drain_limit = 1024;

// Receives what `sock` holds and hands each message to `handle`: up to drain_limit messages,
// waiting up to drain_wait for the first and not at all for the others. An exception from a
// receive or from `handle` goes to `on_error` (inside the catch, so that `throw;` rethrows it),
// and the drain goes on with the next message.
template <class Handle, class OnError>
void drain(zmq::socket_t& sock, Handle&& handle, OnError&& on_error,
           std::chrono::milliseconds first_wait = drain_wait) {
  auto timeout = first_wait;
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
void drain(zmq::socket_t& sock, Handle&& handle,
           std::chrono::milliseconds first_wait = drain_wait) {
  drain(sock, std::forward<Handle>(handle), [](const std::exception&) { throw; }, first_wait);
}

// Waits up to drain_wait until one of `socks` has a message: the sockets that have one.
std::vector<zmq::socket_t*> wait_any(const std::vector<zmq::socket_t*>& socks);

} // namespace ag::zmqs
