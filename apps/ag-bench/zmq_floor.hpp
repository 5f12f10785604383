// zmq_floor: the raw cppzmq floors of docs/BENCHMARKS.md (two processes, the runtime's socket
// pattern, no actors), against which process mode's sync round trip and streamed rate are compared
// (over ipc://), and a node's round trips and bandwidth (over TCP loopback, plain and with CURVE).
#pragma once

#include <cstddef>
#include <string>

namespace ag::bench {

// What the two processes talk over, as the runtime's sockets do: ipc:// (a local child), or
// tcp://127.0.0.1 plain or with CURVE (a node's child; this side is the CURVE server with a ZAP
// handler letting in the peer's key alone, as the controller's sockets are).
enum class zmq_path { ipc, tcp, tcp_curve };

// "ipc", "tcp", "tcp_curve".
const char* to_string(zmq_path path) noexcept;

struct zmq_floor {
  zmq_path path = zmq_path::ipc;
  // Median of N round trips: a 64-byte message PUB->SUB, echoed PUSH->PULL.
  double round_trip_us = 0;
  // One way: M small messages (16-byte header + 16-byte body, as two frames like the wire format)
  // PUB->SUB back to back, the time until the peer reports it got all M, divided by M.
  double streamed_us_per_msg = 0;
  // One way: B bytes as messages of a 16-byte header and a 4 MiB body (wire::max_data_piece, as a
  // node's Data frames) PUB->SUB back to back, B over the time until the peer reports all of them.
  double bulk_gbps = 0;
  int round_trips = 0, streamed = 0; // N and M
  std::size_t bulk_bytes = 0;        // B
};

// Starts `peer_program` (this same ag-bench executable; a path, not a name to look up in PATH:
// "/proc/self/exe" will do) as a child with `peer_program --zmq-peer=SPEC` (SPEC: where to connect,
// see zmq_peer_main), binding here a PUB and a PULL: ipc:// endpoints in a fresh runtime directory
// (mode 0700, removed afterwards with its socket files), or tcp://127.0.0.1 at ports the system
// picks. For tcp_curve both key pairs are made here for this one measurement, the peer's in a
// 0600 file of that directory. Waits up to 10 s for the peer's SUB to be connected (hello every
// 1 ms until one is answered), then measures after 100 warm-up round trips: quick, 200 round
// trips, 20 000 streamed messages and 64 MiB in bulk; otherwise 2 000, 200 000 and 1 GiB. Tells
// the peer to exit and reaps it (5 s, then SIGKILL). Throws ag::error naming the path and what
// failed; no child process and no directory is left behind either way.
zmq_floor measure_zmq_floor(const std::string& peer_program, zmq_path path, bool quick);

// The peer side, for ag-bench's main when it sees --zmq-peer=SPEC, SPEC one of
//   ipc,DIR                        ipc://DIR/pub and ipc://DIR/pull
//   tcp,PUBPORT,PULLPORT           tcp://127.0.0.1:PUBPORT and tcp://127.0.0.1:PULLPORT
//   tcp_curve,PUBPORT,PULLPORT,KEYS  the same with CURVE, the keys (server public, own public, own
//                                  secret, Z85) read from the file KEYS
// (DIR and KEYS run to the end of SPEC, so a ',' in them is theirs). Returns the exit code: 0
// after the exit message, 2 on a bad SPEC, a socket or protocol error, 3 when it gave up (30 s
// without any message, or its parent is gone).
int zmq_peer_main(const std::string& spec);

} // namespace ag::bench
