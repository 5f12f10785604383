// shm_floor: the shared-memory floor of docs/BENCHMARKS.md: a ping-pong between two processes
// through one cache line each way, the least a round trip over shared memory can cost; against it
// the shared-memory path's round trip is compared.
#pragma once

namespace ag::bench {

struct shm_floor {
  double spin_us = 0;  // median round trip, each side spinning on the other's line
  double futex_us = 0; // each side sleeping on a futex (FUTEX_WAIT / FUTEX_WAKE) at once
  double spin_then_futex_us = 0; // each side spinning 50 us, then sleeping (the runtime's waits)
  int round_trips = 0;
};

// Forks a peer (it touches shared memory and futexes only, then _exits) that answers each ping;
// `quick`: 2 000 round trips per kind, otherwise 20 000. Throws ag::error when the peer does not
// answer within 10 s; no child is left behind either way.
shm_floor measure_shm_floor(bool quick);

} // namespace ag::bench
