// cuda_graph: a step's recorded calls (cuda/recording_stream.hpp) captured from a CUDA stream into
// an executable CUDA graph, updated in place (cudaGraphExecUpdate) when a later capture of the same
// step fits it, and launched as one. What cuda_stream's capture() and launch() do.
#pragma once

#include <memory>
#include <vector>

#include "cuda/kernel_stream.hpp"

struct CUstream_st;

namespace ag::cuda {

// Runs `calls` on `stream` (whose stream handle is `handle`) under stream capture, and makes graph
// the executable graph of what they enqueued: `graph`'s own updated, when it holds one the capture
// fits, else a new one. Throws ag::error naming `device` when capture fails (graph unchanged).
capture_outcome capture(kernel_stream& stream, CUstream_st* handle,
                        const std::vector<recorded_call>& calls,
                        std::unique_ptr<stream_graph>& graph);

// Launches graph (made by capture) on `handle`.
void launch(CUstream_st* handle, stream_graph& graph, const std::string& device);

} // namespace ag::cuda
