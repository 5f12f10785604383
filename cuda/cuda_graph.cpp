#include "cuda/cuda_graph.hpp"

#include <string>

#include <cuda_runtime.h>

#include "actorgraph/error.hpp"
#include "cuda/cuda_error.hpp"

namespace ag::cuda {

namespace {

class cuda_graph final : public stream_graph {
public:
  cuda_graph(cudaGraphExec_t exec, std::size_t nodes) noexcept : exec_(exec), nodes_(nodes) {}
  ~cuda_graph() override { AG_CUDA_TRY_NOTHROW(cudaGraphExecDestroy(exec_)); }
  cuda_graph(const cuda_graph&) = delete;
  cuda_graph& operator=(const cuda_graph&) = delete;

  std::size_t nodes() const noexcept override { return nodes_; }
  cudaGraphExec_t exec() const noexcept { return exec_; }
  void set_nodes(std::size_t n) noexcept { nodes_ = n; }

private:
  cudaGraphExec_t exec_;
  std::size_t nodes_;
};

struct graph_deleter {
  void operator()(CUgraph_st* g) const noexcept { AG_CUDA_TRY_NOTHROW(cudaGraphDestroy(g)); }
};
using graph_ptr = std::unique_ptr<CUgraph_st, graph_deleter>;

// Ends a capture that a call's failure cut short: the stream is usable again, the partial graph
// gone, the error cleared.
void abandon_capture(cudaStream_t s) noexcept {
  cudaGraph_t partial = nullptr;
  (void)cudaStreamEndCapture(s, &partial);
  if (partial)
    (void)cudaGraphDestroy(partial);
  (void)cudaGetLastError();
}

} // namespace

capture_outcome capture(kernel_stream& stream, CUstream_st* handle,
                        const std::vector<recorded_call>& calls,
                        std::unique_ptr<stream_graph>& graph) {
  const std::string dev = stream.device().str();
  // Thread-local: another thread's unsafe call (a cudaMalloc of another lane) does not end it.
  AG_CUDA_TRY(cudaStreamBeginCapture(handle, cudaStreamCaptureModeThreadLocal));
  try {
    for (auto& c : calls)
      c.run(stream);
  } catch (const std::exception& e) {
    abandon_capture(handle);
    throw error(dev + ": a step could not be captured into a CUDA graph: " + e.what());
  }
  cudaGraph_t captured = nullptr;
  if (const cudaError_t st = cudaStreamEndCapture(handle, &captured); st != cudaSuccess) {
    (void)cudaGetLastError();
    throw error(dev + ": a step could not be captured into a CUDA graph: "
                + cudaGetErrorString(st));
  }
  graph_ptr g{captured};
  std::size_t nodes = 0;
  AG_CUDA_TRY(cudaGraphGetNodes(g.get(), nullptr, &nodes));
  if (auto* old = dynamic_cast<cuda_graph*>(graph.get())) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(old->exec(), g.get(), &info) == cudaSuccess) {
      old->set_nodes(nodes);
      return capture_outcome::updated;
    }
    (void)cudaGetLastError(); // another topology: instantiated anew below
  }
  cudaGraphExec_t exec = nullptr;
  AG_CUDA_TRY(cudaGraphInstantiate(&exec, g.get(), 0));
  graph = std::make_unique<cuda_graph>(exec, nodes);
  return capture_outcome::instantiated;
}

void launch(CUstream_st* handle, stream_graph& graph, const std::string& device) {
  auto* g = dynamic_cast<cuda_graph*>(&graph);
  if (!g)
    throw error(device + ": a graph of another kind of stream");
  AG_CUDA_TRY(cudaGraphLaunch(g->exec(), handle));
}

} // namespace ag::cuda
