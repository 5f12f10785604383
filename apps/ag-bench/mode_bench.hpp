// mode_bench: ag-bench's figures of actorgraph in thread and process mode, on each transport
// (docs/BENCHMARKS.md): streamed per-operator time, the sync round trip, start-up to ready,
// host-to-device bandwidth, matmul, idle CPU and queued collectives of one runtime per mode; and
// the hardware floors they are set against (raw launches, registered copies, SGEMM, ZMQ and
// shared memory).
#pragma once

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <actorgraph/device.hpp>
#include <actorgraph/graph_option.hpp>

#include "apps/ag-bench/shm_floor.hpp"
#include "apps/ag-bench/zmq_floor.hpp"
#include "cuda/floors.hpp"

namespace ag::bench {

// What the environment refused: a runtime that did not start, a file that cannot be written
// (exit code 3).
struct cannot_run : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct sizes {
  int streamed_ops;    // per measurement of the streamed per-op time
  int round_trips;     // sync round trips
  int startups;        // runtimes constructed for the start-up figure
  std::size_t h2d_bytes;
  int h2d_repeats;
  int matmul_n;
  int matmul_repeats;
  int launches; // of the raw launch floor
  int idle_ms;  // how long the idle CPU is measured
  int queued;   // collectives queued without a wait (apps/ag-bench/queue_bench.hpp)
};

constexpr sizes full_sizes{20000, 200, 3, std::size_t{256} << 20, 9, 4096, 20, 20000, 2000, 60000};
constexpr sizes quick_sizes{2000, 50, 1, std::size_t{16} << 20, 2, 256, 2, 2000, 500, 10000};
constexpr int64_t elements = 4096; // of every streamed add

struct mode_figures {
  double startup_ms = NAN;
  double streamed_us = NAN;  // per step: one add on every device
  double submit_us = NAN;    // of which the user's thread spent submitting
  double round_trip_us = NAN;
  double h2d_gbps = NAN;
  double matmul_tflops = NAN;
  double idle_cpu_percent = NAN; // of one core, controller and children, while nothing is submitted
  // Queued all_reduces against as many adds (queue_bench.hpp): settling, and (process mode) their
  // failure once the children are killed, each as a multiple of the adds' time.
  double queued_ratio = NAN, queued_failure_ratio = NAN;
  std::vector<std::pair<int, double>> sweep; // (ops per sync, us per op)
};

struct floor_figures {
  std::optional<ag::floors::launch_floor> launch;
  std::optional<double> h2d_gbps;
  std::optional<double> sgemm_tflops;
  std::optional<ag::bench::zmq_floor> zmq; // over ipc://
  std::optional<ag::bench::zmq_floor> zmq_tcp;
  std::optional<ag::bench::zmq_floor> zmq_tcp_curve;
  std::optional<ag::bench::shm_floor> shm;
};

// One runtime of `devices` in thread or process mode on `transport`, started again for each
// start-up figure; `timeline`, when not empty, is written to TIMELINE.NAME.json. Each runtime owns
// its actor system, as `ag::runtime rt{opt}` in an application does: two scheduler threads at
// most, every actor detached (docs/BENCHMARKS.md, on borrowed systems). Throws cannot_run when a
// runtime does not start, ag::error when a measurement fails or gives a wrong result.
mode_figures measure_mode(const std::vector<ag::device>& devices, bool process,
                          ag::transport transport, std::chrono::microseconds spin,
                          std::chrono::milliseconds progress, const sizes& n, bool sweep,
                          const std::string& timeline, const std::string& name);

// The floors of the first of `devices`: the CUDA ones on a cuda device only (else left empty),
// the ZMQ floors with `self` as the peer process, and the shared-memory floor.
floor_figures measure_floors(const std::vector<ag::device>& devices, const std::string& self,
                             const sizes& n, bool quick);

} // namespace ag::bench
