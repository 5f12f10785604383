// What a recorded trace needs of its replay (actors/replay.cpp): runners that share this
// process's peer directory, runners in processes, a ring that holds its largest frame.
#pragma once

#include <cstddef>

#include "actors/replay.hpp"
#include "ipc/trace.hpp"

namespace ag {

// True when a recorded batch has a direct transfer (graph/op.hpp, peer_copy and peer_sum): its
// lanes' runners must share this process's peer directory.
bool has_direct_transfers(const trace::file& t);

// True when a recorded broadcast has a peer_export: children read each other's memory through
// CUDA IPC, which works only between processes.
bool has_exports(const trace::file& t);

// The shared-memory path's ring: graph_option's, or large enough for the largest recorded frame
// (one recorded on the sockets may be larger than a ring's); 0 on the sockets.
std::size_t ring_bytes_for(const trace::file& t, const replay_options& opt);

} // namespace ag
