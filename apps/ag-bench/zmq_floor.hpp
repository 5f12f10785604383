// zmq_floor: the raw cppzmq floors of docs/BENCHMARKS.md (two processes, the runtime's ipc:// socket
// pattern, no actors), against which process mode's sync round trip and streamed rate are compared.
#pragma once

#include <string>

namespace ag::bench {

struct zmq_floor {
  double round_trip_us = 0;       // median of N round trips: 64-byte message PUB->SUB, echoed PUSH->PULL
  double streamed_us_per_msg = 0; // one way: M small messages (16-byte header + 16-byte body, as two
                                  // frames like the wire format) PUB->SUB back to back, time until the
                                  // peer reports it got all M, divided by M
  int round_trips = 0, streamed = 0; // N and M
};

// Starts `peer_program` (this same ag-bench executable; a path, not a name to look up in PATH:
// "/proc/self/exe" will do) as a child with `peer_program --zmq-peer=DIR`, where DIR is a fresh
// runtime directory (mode 0700, removed afterwards with its socket files) holding ipc://DIR/pub
// (PUB, bound here) and ipc://DIR/pull (PULL, bound here). Waits up to 10 s for the peer's SUB to be
// connected (hello every 1 ms until one is answered), then measures after 100 warm-up round trips:
// quick, 200 round trips and 20 000 streamed messages; otherwise 2 000 and 200 000. Tells the peer
// to exit and reaps it (5 s, then SIGKILL). Throws ag::error naming what failed; no child process
// and no directory is left behind either way.
zmq_floor measure_zmq_floor(const std::string& peer_program, bool quick);

// The peer side, for ag-bench's main when it sees --zmq-peer=DIR; returns the exit code: 0 after
// the exit message, 2 on a socket or protocol error, 3 when it gave up (30 s without any message,
// or its parent is gone).
int zmq_peer_main(const std::string& dir);

} // namespace ag::bench
