// peer_bench: ag-bench's direct-transfer figures (--mode=peers, docs/BENCHMARKS.md): moves and
// all_reduce between the devices of one runtime in thread mode, on the direct path
// (graph_option::peer_transfers: the destination reads its peer's memory) and on the store path
// (peer_transfers = false) in the same run, against raw cudaMemcpyPeerAsync and raw launch floors
// measured in that run. On sim devices the direct path runs with graph_option::sim_peers and the
// floors are n/a. With AG_CUDA_ORDINALS=0,0, cuda:0 and cuda:1 are two lanes of one GPU: the
// floor's copy is then a device-to-device copy within it, as the runtime's is.
#pragma once

#include <cmath>
#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include <actorgraph/device.hpp>

namespace ag::bench {

struct peer_sizes {
  std::size_t move_bytes;                // the tensor moved from devices[0] to devices[1]
  int move_repeats;                      // of the move, after one of warm-up
  std::vector<std::size_t> reduce_bytes; // per part, of each all_reduce of the sweep
  int small_repeats;                     // of each all_reduce of up to 1 MiB per part
  int large_repeats;                     // above, after two of warm-up each
};

// One size of the all_reduce sweep: one part per device, every device of the runtime.
struct peer_reduce_figures {
  std::size_t bytes = 0; // per part
  int repeats = 0;
  double direct_us = NAN; // median of the call and sync(), on the direct path
  double store_us = NAN;  // the same on the store path (peer_transfers = false)
  // 2 (W - 1) / W x bytes / time (NCCL's bus bandwidth), W devices.
  double direct_bus_gbps = NAN, store_bus_gbps = NAN;
  double floor_gbps = NAN; // the peer-copy floor at `bytes`, devices[0] to devices[1]
};

struct peer_figures {
  std::string devices; // "cuda:0,cuda:1"
  std::string from, to; // the move's and the floors' source and destination: devices[0], [1]
  std::size_t group = 0; // W: the devices of each all_reduce, every one of `devices`
  bool sim = false;    // sim devices: graph_option::sim_peers, no floors
  bool same_gpu = false; // devices[0] and devices[1] are lanes of one GPU (AG_CUDA_ORDINALS)
  bool process = false;  // the devices run in child processes (direct: CUDA IPC exports)
  std::size_t move_bytes = 0;
  double move_direct_gbps = NAN, move_store_gbps = NAN; // .to(devices[1]) and sync(): median
  double move_floor_gbps = NAN;                         // the peer-copy floor at move_bytes
  double launch_sync_us = NAN; // one raw launch and its synchronize (the 4 KiB all_reduce floor)
  std::vector<peer_reduce_figures> reduce;
};

// Measures the floors, then one runtime in thread mode on each path, one after the other. Every
// result is checked (a moved tensor's values, every all_reduce result's sums). `devices`: two or
// more, all cuda or all sim, on this machine; `launch_sync_us`: the raw launch floor of the run
// (NaN: none). Throws cannot_start (node_bench.hpp) when a runtime does not start, ag::error when
// a measurement fails or gives a wrong result.
peer_figures measure_peers(const std::vector<ag::device>& devices, const peer_sizes& n,
                           double launch_sync_us, bool process = false);

// One figure: on the direct path, on the store path, its floor and its target.
struct peer_row {
  std::string what;
  std::string unit;
  double direct = NAN, store = NAN, floor = NAN;
  std::string floor_name;
  std::string target; // ">= 0.9", ... of direct / floor
};

std::vector<peer_row> make_peer_rows(const peer_figures& f);

void print_peer_table(const peer_figures& f, const std::vector<peer_row>& rows);

// ",\n  \"peers\": {...} or null, \"peer_rows\": [...]", in the style of ag-bench's --json.
void write_json_peers(std::ostream& o, const peer_figures* f, const std::vector<peer_row>& rows);

} // namespace ag::bench
