// The hardware floors that apps/ag-bench compares actorgraph against (docs/BENCHMARKS.md): the
// same elementwise kernel launched on a raw CUDA stream, host-to-device copies from registered
// memory, and cuBLAS SGEMM called directly, with none of actorgraph's actors in the way. They are
// the static library actorgraph-floors, which only ag-bench links: applications do not carry them.
// They launch libactorgraph's own kernels and load cuBLAS through its loader. Without a CUDA build
// or a GPU, every one is empty (ag-bench prints n/a). Every `device` is cuda:N, on the GPU the
// runtime runs it on (ag::cuda_ordinal: N itself without AG_CUDA_ORDINALS).
#pragma once

#include <cstddef>
#include <optional>

namespace ag::floors {

struct launch_floor {
  double back_to_back_us = 0; // per launch, `launches` launches then one synchronize (best of
                              // three, after a quarter of a second that wakes the GPU's clocks)
  double launch_sync_us = 0;  // median of one launch followed by cudaStreamSynchronize
};

// add of `elements` floats on cuda:`device`.
std::optional<launch_floor> raw_launch(int device, int launches, std::size_t elements);

// One CUDA graph of `kernels` adds of `elements` floats, captured on a raw stream and launched
// `launches` times back to back, then one synchronize: microseconds per add (best of three). The
// floor of a step of that many adds launched as a graph (ag-bench --mode=steps).
std::optional<double> graph_launch_us(int device, int kernels, std::size_t elements, int launches);

// cudaMemcpyAsync of `bytes` from a cudaHostRegister'ed POSIX shared-memory mapping (the kind of
// memory the tensor store is in process mode) to the GPU: median GB/s of `repeats` copies.
std::optional<double> h2d_registered_gbps(int device, std::size_t bytes, int repeats);

// cudaMemcpyPeerAsync of `bytes` from cuda:src_device to cuda:dst_device on a non-blocking stream
// of the destination (the copy of a direct move in thread mode): median GB/s of `repeats` copies,
// each followed by its synchronize, after one of warm-up. Logical devices map to GPUs as the
// runtime's do (ag::cuda_ordinal, AG_CUDA_ORDINALS); between two GPUs, peer access is enabled
// first where they have it; two lanes of one GPU make it a device-to-device copy within it.
std::optional<double> peer_copy_gbps(int dst_device, int src_device, std::size_t bytes,
                                     int repeats);

// Row-major n x n SGEMM (full FP32, as actorgraph runs it): TFLOP/s over `repeats` calls, on
// values uniform in [-1, 1) (zeros run faster than any data).
std::optional<double> sgemm_tflops(int device, int n, int repeats);

// n x n cublasGemmEx of bfloat16 operands accumulating in float32 (CUBLAS_COMPUTE_32F, as
// actorgraph runs it): TFLOP/s over `repeats` calls, on values uniform in [-1, 1).
std::optional<double> bf16_gemm_tflops(int device, int n, int repeats);

// cudaMemcpyAsync of `bytes` between two buffers of one GPU: bytes read and written (2 x bytes)
// per second, in GB/s, over `repeats` copies after one of warm-up.
std::optional<double> d2d_copy_gbps(int device, std::size_t bytes, int repeats);

} // namespace ag::floors
