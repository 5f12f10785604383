// The hardware floors of a build without nvcc: every one is empty, and ag-bench prints n/a.
#include "cuda/floors.hpp"

namespace ag::floors {

std::optional<launch_floor> raw_launch(int, int, std::size_t) { return std::nullopt; }
std::optional<double> h2d_registered_gbps(int, std::size_t, int) { return std::nullopt; }
std::optional<double> graph_launch_us(int, int, std::size_t, int) { return std::nullopt; }
std::optional<double> peer_copy_gbps(int, int, std::size_t, int) { return std::nullopt; }
std::optional<double> sgemm_tflops(int, int, int) { return std::nullopt; }
std::optional<double> bf16_gemm_tflops(int, int, int) { return std::nullopt; }
std::optional<double> d2d_copy_gbps(int, std::size_t, int) { return std::nullopt; }

} // namespace ag::floors
