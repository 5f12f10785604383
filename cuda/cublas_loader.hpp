// cuBLAS, loaded when the first matmul needs it rather than linked: the library's static start-up
// costs about 0.4 s in every process that links it, which every child and every program would pay
// on start whether or not it multiplies a matrix.
#pragma once

#include <cublas_api.h>

namespace ag::cublas {

struct api {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

// The loaded library (once per process, thread-safe). Throws ag::error naming the library and
// dlopen's reason when it cannot be loaded.
const api& get();

} // namespace ag::cublas
