// cuda_error and AG_CUDA_TRY: how every CUDA runtime and cuBLAS failure becomes an ag::error that
// names the call, where it was made, the device and CUDA's own words (as NVIDIA cuCollections).
// Only the CUDA backend includes this header; it needs the CUDA include path.
#pragma once

#include <cstdio>
#include <string>

#include <cublas_api.h>

#include "cuda/cublas_loader.hpp"
#include <cuda_runtime_api.h>

#include "actorgraph/error.hpp"

namespace ag {

// A CUDA runtime or cuBLAS call failed. An ag::error, so that callers which only know the public
// API catch it with everything else; the type tells tests and logs that the GPU said no.
class cuda_error : public error {
public:
  using error::error;
};

namespace detail {

// "cuda:0" for the calling thread's current device; empty when even that query fails (no driver,
// or a sticky error that poisoned the context). Named so that a log of several GPU streams says
// which GPU failed: the call text alone does not.
inline std::string current_cuda_device() {
  int d = -1;
  if (cudaGetDevice(&d) != cudaSuccess) {
    (void)cudaGetLastError(); // keep this query's failure out of the next launch check
    return {};
  }
  return "cuda:" + std::to_string(d);
}

inline std::string cuda_message(const std::string& what, const char* call, const char* file,
                                int line) {
  std::string device = current_cuda_device();
  std::string msg = device.empty() ? std::string() : device + ": ";
  msg += call;
  msg += " failed at ";
  msg += file;
  msg += ':';
  msg += std::to_string(line);
  msg += ": ";
  msg += what;
  return msg;
}

inline std::string cuda_status_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

inline std::string cublas_status_text(cublasStatus_t status) {
  const auto& api = ::ag::cublas::get(); // loaded: a status only comes from a cuBLAS call
  return std::string(api.status_name(status)) + " (" + api.status_string(status) + ")";
}

// Out of line from the macro so that the success path is one compare and a predicted branch.
[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                          int line) {
  // A non-sticky error is also recorded as the thread's "last error"; clear it so that the next
  // AG_CUDA_TRY(cudaGetLastError()) after a kernel launch does not report this failure again.
  (void)cudaGetLastError();
  throw cuda_error(cuda_message(cuda_status_text(status), call, file, line));
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* call,
                                            const char* file, int line) {
  throw cuda_error(cuda_message(cublas_status_text(status), call, file, line));
}

// For destructors and noexcept paths: there is nobody to throw to, so the failure goes to stderr
// rather than vanishing.
inline void report_cuda_error(cudaError_t status, const char* call, const char* file,
                              int line) noexcept {
  try {
    (void)cudaGetLastError();
    const std::string msg = cuda_message(cuda_status_text(status), call, file, line);
    std::fprintf(stderr, "actorgraph: %s\n", msg.c_str());
  } catch (...) {
    std::fprintf(stderr, "actorgraph: %s failed at %s:%d\n", call, file, line);
  }
}

inline void report_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                int line) noexcept {
  try {
    const std::string msg = cuda_message(cublas_status_text(status), call, file, line);
    std::fprintf(stderr, "actorgraph: %s\n", msg.c_str());
  } catch (...) {
    std::fprintf(stderr, "actorgraph: %s failed at %s:%d\n", call, file, line);
  }
}

} // namespace detail
} // namespace ag

// Throws ag::cuda_error when a CUDA runtime call does not return cudaSuccess.
#define AG_CUDA_TRY(call)                                                                          \
  do {                                                                                             \
    const cudaError_t ag_cuda_status_ = (call);                                                    \
    if (ag_cuda_status_ != cudaSuccess)                                                            \
      ::ag::detail::throw_cuda_error(ag_cuda_status_, #call, __FILE__, __LINE__);                  \
  } while (0)

// AG_CUDA_TRY for destructors and noexcept functions: reports the failure to stderr and goes on.
#define AG_CUDA_TRY_NOTHROW(call)                                                                  \
  do {                                                                                             \
    const cudaError_t ag_cuda_status_ = (call);                                                    \
    if (ag_cuda_status_ != cudaSuccess)                                                            \
      ::ag::detail::report_cuda_error(ag_cuda_status_, #call, __FILE__, __LINE__);                 \
  } while (0)

// Throws ag::cuda_error when a cuBLAS call does not return CUBLAS_STATUS_SUCCESS.
#define AG_CUBLAS_TRY(call)                                                                        \
  do {                                                                                             \
    const cublasStatus_t ag_cublas_status_ = (call);                                               \
    if (ag_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                \
      ::ag::detail::throw_cublas_error(ag_cublas_status_, #call, __FILE__, __LINE__);              \
  } while (0)

#define AG_CUBLAS_TRY_NOTHROW(call)                                                                \
  do {                                                                                             \
    const cublasStatus_t ag_cublas_status_ = (call);                                               \
    if (ag_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                \
      ::ag::detail::report_cublas_error(ag_cublas_status_, #call, __FILE__, __LINE__);             \
  } while (0)
