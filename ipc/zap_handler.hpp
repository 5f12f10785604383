// zap_handler: who may connect to this process's CURVE sockets (ZMQ's authentication protocol,
// RFC 27, at inproc://zeromq.zap.01). It answers every CURVE handshake of the sockets of one ZMQ
// context from a list of allowed public keys, each with the name it is known by (a node's name),
// which becomes the User-Id of every message that peer sends. A peer it refuses is logged with its
// address, at most 10 lines a second (then one line says how many more were refused:
// ipc/log_limit.hpp), so that a flood of strangers cannot flood the log. It runs on a thread of its own and must be up before any CURVE server socket binds:
// libzmq lets every client in when no handler is bound. It also watches the connections of the
// sockets it is given (a socket monitor), so that a peer that never reaches it (plaintext, the
// wrong server key, garbage) is logged too, with the address the accepted connection came from
// (libzmq's handshake events name only the listening endpoint).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ipc/log_limit.hpp"

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
  // One watched socket: its monitor, and each accepted connection not yet through its handshake.
  struct watched {
    void* monitor = nullptr;
    std::string what;
    struct pending {
      std::string peer;    // "tcp://1.2.3.4:5678"
      std::string failure; // why its handshake failed, once it did
      bool told = false;   // the ZAP handler logged it already
    };
    std::map<int, pending> connections; // by file descriptor
  };

  void run(void* sock);
  void take_event(watched& w);

  std::map<std::string, std::string> allowed_;
  log_limit log_; // used by the thread alone
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  void* sock_ = nullptr;
  zmq::context_t* ctx_ = nullptr;
  std::mutex mutex_; // guards added_: monitors handed to the thread
  std::vector<watched> added_;
  std::vector<watched> monitors_; // the thread's own
  std::thread thread_;
};

} // namespace ag
