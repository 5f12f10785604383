// A matmul_call through cuBLAS: cublasGemmEx, or cublasGemmStridedBatchedEx over the innermost
// batch dimension; float16 and bfloat16 accumulate in float32 (CUBLAS_COMPUTE_32F), float32 runs
// in full FP32 (no TF32).
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <string>

#include "cuda/matmul_call.hpp"

namespace ag::cuda {

// Enqueues the products on the handle's stream. Throws ag::error naming `device` for an operand
// whose strides cuBLAS cannot take (neither row- nor column-major), a dimension past int, or a
// cuBLAS failure.
void gemm(cublasHandle_t handle, const matmul_call& call, cudaStream_t stream,
          const std::string& device);

} // namespace ag::cuda
