// report_pusher: what a child tells its controller, on its PUSH socket with consecutive ids
// (the seed's RemoteRunnerPusher, without the actor): Ready once both its runner exists and a
// Hello was heard (so no broadcast is lost to a slow join), Done, Failed and Received. A node's
// child's also sends back, right before a Done, the store ranges the batches it covers wrote
// (Data-out): over its return streams with a Data-done naming the last piece, or on the PUSH
// socket itself without them or when they are small (small_writes). Used by one thread: the
// pusher actor's (the shared-memory path), or the subscriber's, which runs the batches itself on
// the sockets.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "actorgraph/device.hpp"
#include "actors/node_child.hpp"
#include "ipc/wire.hpp"

namespace ag {

// A child's PUSH connected to `endpoint`: over CURVE with a node's keys, plain without.
zmq::socket_t child_pusher(zmq::context_t& ctx, const std::string& endpoint,
                           const std::optional<node_child>& node, int io_thread = -1);

class report_pusher {
public:
  // A Done whose batches wrote this many bytes or fewer sends them on the reports connection,
  // also where return streams exist.
  static constexpr uint64_t small_writes = uint64_t{64} << 10;

  // first_id: wire::first_report_id of the child's generation.
  report_pusher(zmq::context_t& ctx, const std::string& endpoint, uint32_t lane, device where,
                std::optional<node_child> node, uint64_t first_id = 1);

  void runner_ready();
  void heard_hello();
  // A node's child: the store ranges (offset, bytes, ...) its batches up to `ops_after` write.
  void writes(uint64_t ops_after, std::vector<uint64_t> ranges);
  void done(uint32_t lane, uint64_t ops_done, uint64_t entries, uint64_t live);
  void failed(uint32_t lane, uint64_t index, std::string what);
  void received(uint64_t count);

private:
  void push(wire::msg_type type, const wire::bytes& body);
  void send_writes(uint32_t lane, uint64_t done);
  void maybe_ready();

  zmq::socket_t sock_;
  uint64_t next_id_ = 1;
  uint32_t lane_ = 0;
  device where_;
  bool runner_ready_ = false;
  bool heard_hello_ = false;
  bool ready_sent_ = false;
  // A node's child: its store, its return streams and the last Data-out piece id on them, and
  // per batch still to be acknowledged what it writes.
  std::optional<node_child> node_;
  std::vector<zmq::socket_t> returns_;
  uint64_t next_piece_ = 1;
  struct batch_writes {
    uint64_t ops_after = 0;
    std::vector<uint64_t> ranges; // offset, bytes, offset, bytes, ...
  };
  std::deque<batch_writes> pending_;
};

} // namespace ag
