// zap_handler: who may connect to this process's CURVE sockets (ZMQ's authentication protocol,
// RFC 27, at inproc://zeromq.zap.01). It answers every CURVE handshake of the sockets of one ZMQ
// context from a list of allowed public keys, each with the name it is known by (a node's name),
// which becomes the User-Id of every message that peer sends. A peer it refuses is logged with its
// address. It runs on a thread of its own and must be up before any CURVE server socket binds:
// libzmq lets every client in when no handler is bound. It also watches the handshakes of the
// sockets it is given (a socket monitor), so that a peer that never reaches it (plaintext, or
// speaking garbage) is logged with its address too.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace zmq {
class context_t;
class socket_t;
} // namespace zmq

namespace ag {

class zap_handler {
public:
  // allowed: Z85 public key -> name. log: called with one line per refused peer.
  zap_handler(zmq::context_t& ctx, std::map<std::string, std::string> allowed,
              std::function<void(const std::string&)> log);
  ~zap_handler();
  zap_handler(const zap_handler&) = delete;
  zap_handler& operator=(const zap_handler&) = delete;

  // How many peers were refused so far.
  uint64_t refused() const noexcept { return refused_.load(); }

  // Logs every failed handshake of `server` (a CURVE socket, on the caller's thread, which owns
  // it) with the peer's address; `what` names the socket in the log.
  void watch(zmq::socket_t& server, const std::string& what);

private:
  void run(void* sock);
  void take_event(void* monitor, const std::string& what);

  std::map<std::string, std::string> allowed_;
  std::function<void(const std::string&)> log_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  void* sock_ = nullptr;
  zmq::context_t* ctx_ = nullptr;
  std::mutex mutex_; // guards added_: monitors handed to the thread
  std::vector<std::pair<void*, std::string>> added_;
  std::vector<std::pair<void*, std::string>> monitors_; // the thread's own
  std::thread thread_;
};

} // namespace ag
