// cuBLAS, loaded when the first matmul needs it rather than linked: the library's static start-up
// costs about 0.4 s in every process that links it, which every child and every program would pay
// on start whether or not it multiplies a matrix.
#pragma once

#include <cublas_api.h>

namespace ag::cublas {

// The C symbols (C++ overloads them with a legacy form taking a cudaDataType compute type).
using gemm_ex_fn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                      int, int, const void*, const void*, cudaDataType, int,
                                      const void*, cudaDataType, int, const void*, void*,
                                      cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using gemm_strided_batched_ex_fn =
  cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                     const void*, const void*, cudaDataType, int, long long, const void*,
                     cudaDataType, int, long long, const void*, void*, cudaDataType, int, long long,
                     int, cublasComputeType_t, cublasGemmAlgo_t);

struct api {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemm_v2) sgemm;
  gemm_ex_fn gemm_ex;
  gemm_strided_batched_ex_fn gemm_strided_batched_ex;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

// The loaded library (once per process, thread-safe). Throws ag::error naming the library and
// dlopen's reason when it cannot be loaded.
const api& get();

} // namespace ag::cublas
