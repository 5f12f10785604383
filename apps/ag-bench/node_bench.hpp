// node_bench: ag-bench's node figures (docs/BENCHMARKS.md): a runtime whose one device is on a node
// on this same machine (apps/ag-bench/local_node.hpp), so that every batch, acknowledgement and
// tensor byte crosses the network path (CAF over TLS for control, ZMQ over TCP with CURVE for
// data) on loopback, to be set against the raw TCP floors of the same run.
#pragma once

#include <cmath>
#include <chrono>
#include <cstddef>
#include <string>

#include <actorgraph/device.hpp>
#include <actorgraph/error.hpp>

namespace ag::bench {

// The node or a runtime using it could not start (ag-bench's exit code 3).
struct cannot_start : ag::error {
  using ag::error::error;
};

struct node_sizes {
  int round_trips;    // of each round-trip figure, after 10 of warm-up
  std::size_t bytes;  // of each upload and download
  int repeats;        // of each upload and download, after one of warm-up
  std::size_t streams = 8; // graph_option::node_streams
  std::string timeline; // non-empty: the runtime's timeline goes to TIMELINE.node.json, and the
                        // node's children's to TIMELINE.node-children/
  std::chrono::microseconds spin{50}; // graph_option::spin_wait
};

struct node_figures {
  std::string device;              // the device measured: "n1/sim:0"
  double startup_ms = NAN;         // the ag::runtime constructor: the node reached, its child ready
  double sync_round_trip_us = NAN; // an add of 16 floats on the node's device, then sync(): median
  double read_round_trip_us = NAN; // (a + b).to_vector() of 4096 floats: median
  double upload_gbps = NAN;   // a cpu tensor (in the store already) .to(the node's device), sync()
  double download_gbps = NAN; // that tensor on the node .to(cpu), sync(): median
};

// Starts a node "n1" on this machine lending `local` (sim:N or cuda:N), a runtime in process mode
// whose one device is n1's `local`, measures, then ends the runtime and stops the node. The moved
// bytes are checked on their way back. Throws cannot_start when the node or the runtime does not
// start, ag::error when a measurement fails or gives a wrong result; nothing is left behind.
node_figures measure_node(const ag::device& local, const node_sizes& n);

} // namespace ag::bench
