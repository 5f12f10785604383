#include "cuda/floors.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "actorgraph/error.hpp"
#include "cuda/cublas_loader.hpp"
#include "cuda/cuda_error.hpp"
#include "cuda/cuda_kernels.cuh"
#include "cuda/kernel_stream.hpp"

namespace ag::floors {

namespace {

using clock_type = std::chrono::steady_clock;

double us_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::micro>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Device memory, a stream and the device bound, released whatever happens. `device` is cuda:N,
// bound to the GPU it runs on (cuda_ordinal: N itself without AG_CUDA_ORDINALS).
class scope {
public:
  explicit scope(int device) : gpu_(cuda_ordinal(device)) {
    AG_CUDA_TRY(cudaSetDevice(gpu_));
    AG_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~scope() {
    AG_CUDA_TRY_NOTHROW(cudaSetDevice(gpu_)); // another scope may have bound another GPU since
    for (void* p : buffers_)
      AG_CUDA_TRY_NOTHROW(cudaFree(p));
    AG_CUDA_TRY_NOTHROW(cudaStreamDestroy(stream_));
  }
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;

  template <class T>
  T* alloc(std::size_t count) {
    void* p = nullptr;
    AG_CUDA_TRY(cudaMalloc(&p, count * sizeof(T)));
    buffers_.push_back(p);
    AG_CUDA_TRY(cudaMemsetAsync(p, 0, count * sizeof(T), stream_));
    return static_cast<T*>(p);
  }

  cudaStream_t stream() const noexcept { return stream_; }
  int gpu() const noexcept { return gpu_; }
  void sync() const { AG_CUDA_TRY(cudaStreamSynchronize(stream_)); }

private:
  int gpu_;
  cudaStream_t stream_ = nullptr;
  std::vector<void*> buffers_;
};

bool usable(int device) { return device >= 0 && device < cuda_device_count(); }

// An add of `elements` floats, on buffers of s.
elementwise_call add_on(scope& s, std::size_t elements) {
  auto* a = s.alloc<float>(elements);
  auto* b = s.alloc<float>(elements);
  auto* out = s.alloc<float>(elements);
  return contiguous_call(op_kind::add, dtype::float32, out, a, b, elements);
}

// Microseconds per launch of `launch`, `launches` back to back then one synchronize: the best of
// three (a floor, not an average), after a quarter of a second of them (an idle GPU runs at a low
// clock).
template <class F>
double per_launch(scope& s, int launches, F&& launch) {
  const auto warm = clock_type::now();
  while (us_since(warm) < 250e3) {
    for (int i = 0; i < std::min(launches, 1000); ++i)
      launch();
    s.sync();
  }
  std::vector<double> runs;
  for (int r = 0; r < 3; ++r) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < launches; ++i)
      launch();
    s.sync();
    runs.push_back(us_since(t0) / launches);
  }
  return *std::min_element(runs.begin(), runs.end());
}

} // namespace

std::optional<launch_floor> raw_launch(int device, int launches, std::size_t elements) {
  if (!usable(device))
    return std::nullopt;
  scope s{device};
  const auto add = add_on(s, elements);
  launch_floor f;
  f.back_to_back_us = per_launch(s, launches, [&] { cuda::elementwise(add, s.stream()); });
  std::vector<double> round_trips;
  const int n = std::max(10, launches / 20);
  for (int i = 0; i < n; ++i) {
    const auto t0 = clock_type::now();
    cuda::elementwise(add, s.stream());
    s.sync();
    round_trips.push_back(us_since(t0));
  }
  f.launch_sync_us = median(round_trips);
  return f;
}

std::optional<double> graph_launch_us(int device, int kernels, std::size_t elements, int launches) {
  if (!usable(device) || kernels <= 0 || launches <= 0)
    return std::nullopt;
  scope s{device};
  const auto add = add_on(s, elements);
  AG_CUDA_TRY(cudaStreamBeginCapture(s.stream(), cudaStreamCaptureModeThreadLocal));
  for (int k = 0; k < kernels; ++k)
    cuda::elementwise(add, s.stream());
  cudaGraph_t graph = nullptr;
  AG_CUDA_TRY(cudaStreamEndCapture(s.stream(), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  AG_CUDA_TRY(made);
  const double us =
    per_launch(s, launches, [&] { AG_CUDA_TRY(cudaGraphLaunch(exec, s.stream())); }) / kernels;
  (void)cudaGraphExecDestroy(exec);
  return us;
}

std::optional<double> h2d_registered_gbps(int device, std::size_t bytes, int repeats) {
  if (!usable(device))
    return std::nullopt;
  // A POSIX shared-memory object, mapped like the tensor store of process mode (and unlinked at
  // once: nothing is left behind).
  const std::string name = "/ag-" + std::to_string(::getpid()) + "-floor";
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    throw error("h2d floor: cannot create " + name);
  ::shm_unlink(name.c_str());
  void* host = ::ftruncate(fd, static_cast<off_t>(bytes)) == 0
                 ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                 : MAP_FAILED;
  ::close(fd);
  if (host == MAP_FAILED)
    throw error("h2d floor: cannot map " + std::to_string(bytes) + " bytes of " + name);
  struct unmap {
    void* p;
    std::size_t n;
    ~unmap() { ::munmap(p, n); }
  } unmapped{host, bytes};
  std::fill_n(static_cast<char*>(host), bytes, char{1});
  scope s{device};
  AG_CUDA_TRY(cudaHostRegister(host, bytes, cudaHostRegisterPortable));
  struct unregister {
    void* p;
    ~unregister() { AG_CUDA_TRY_NOTHROW(cudaHostUnregister(p)); }
  } unregistered{host};
  auto* dst = s.alloc<char>(bytes);
  AG_CUDA_TRY(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, s.stream()));
  s.sync();
  std::vector<double> rates;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = clock_type::now();
    AG_CUDA_TRY(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, s.stream()));
    s.sync();
    rates.push_back(double(bytes) / (us_since(t0) * 1e3));
  }
  return median(rates);
}

std::optional<double> peer_copy_gbps(int dst_device, int src_device, std::size_t bytes,
                                     int repeats) {
  if (!usable(dst_device) || !usable(src_device) || bytes == 0)
    return std::nullopt;
  // The source, on its GPU (its fill finished before any copy reads it), then the destination
  // scope, whose GPU stays bound for the copies.
  scope from{src_device};
  auto* src = from.alloc<char>(bytes);
  from.sync();
  scope to{dst_device};
  if (to.gpu() != from.gpu()) {
    int can = 0;
    AG_CUDA_TRY(cudaDeviceCanAccessPeer(&can, to.gpu(), from.gpu()));
    if (can != 0) { // without it the driver still copies, through the host
      const cudaError_t st = cudaDeviceEnablePeerAccess(from.gpu(), 0);
      if (st == cudaErrorPeerAccessAlreadyEnabled)
        (void)cudaGetLastError();
      else
        AG_CUDA_TRY(st);
    }
  }
  auto* dst = to.alloc<char>(bytes);
  auto copy = [&] {
    AG_CUDA_TRY(cudaMemcpyPeerAsync(dst, to.gpu(), src, from.gpu(), bytes, to.stream()));
    to.sync();
  };
  copy(); // warm-up: the first copy sets up the path between them
  std::vector<double> rates;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = clock_type::now();
    copy();
    rates.push_back(double(bytes) / (us_since(t0) * 1e3));
  }
  return median(rates);
}

namespace {

// count values uniform in [-1, 1) as rt.uniform draws them, in float32 or bfloat16, at out;
// scratch holds count floats.
void uniform_values(void* out, float* scratch, std::size_t count, uint64_t seed, bool bf16,
                    cudaStream_t stream) {
  cuda::random(random_kind::uniform, bf16 ? scratch : static_cast<float*>(out), count, seed, 0,
               -1.0f, 1.0f, stream);
  if (!bf16)
    return;
  auto call = contiguous_call(op_kind::cast, dtype::bfloat16, out, scratch, nullptr, count);
  call.in_type = dtype::float32;
  cuda::elementwise(call, stream);
}

// n x n products on cuda:device, float32 (SGEMM) or bfloat16 (GemmEx, float32 accumulation), in
// full FP32 math: TFLOP/s over `repeats` calls after one of warm-up. The operands hold values
// uniform in [-1, 1), as a benchmark's do: on zeros the tensor cores draw less power and run at
// higher clocks than on any real data.
std::optional<double> gemm_tflops(int device, int n, int repeats, bool bf16) {
  if (!usable(device))
    return std::nullopt;
  const auto& api = cublas::get();
  scope s{device};
  const auto elems = std::size_t(n) * std::size_t(n);
  auto* a = s.alloc<float>(elems); // float32 holds either dtype's n x n
  auto* b = s.alloc<float>(elems);
  auto* c = s.alloc<float>(elems);
  uniform_values(a, c, elems, 1, bf16, s.stream());
  uniform_values(b, c, elems, 2, bf16, s.stream());
  cublasHandle_t h = nullptr;
  AG_CUBLAS_TRY(api.create(&h));
  struct destroy {
    cublasHandle_t h;
    ~destroy() { AG_CUBLAS_TRY_NOTHROW(cublas::get().destroy(h)); }
  } destroyed{h};
  AG_CUBLAS_TRY(api.set_stream(h, s.stream()));
  AG_CUBLAS_TRY(api.set_math_mode(h, CUBLAS_DEFAULT_MATH));
  const float one = 1.0f, zero = 0.0f;
  auto gemm = [&] {
    if (bf16)
      AG_CUBLAS_TRY(api.gemm_ex(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, CUDA_R_16BF, n, a,
                                CUDA_R_16BF, n, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    else
      AG_CUBLAS_TRY(
        api.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n));
  };
  gemm();
  s.sync();
  const auto t0 = clock_type::now();
  for (int i = 0; i < repeats; ++i)
    gemm();
  s.sync();
  const double seconds = us_since(t0) * 1e-6;
  return 2.0 * double(n) * n * n * repeats / seconds * 1e-12;
}

} // namespace

std::optional<double> sgemm_tflops(int device, int n, int repeats) {
  return gemm_tflops(device, n, repeats, false);
}

std::optional<double> bf16_gemm_tflops(int device, int n, int repeats) {
  return gemm_tflops(device, n, repeats, true);
}

std::optional<double> d2d_copy_gbps(int device, std::size_t bytes, int repeats) {
  if (!usable(device))
    return std::nullopt;
  scope s{device};
  auto* src = s.alloc<char>(bytes);
  auto* dst = s.alloc<char>(bytes);
  AG_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s.stream()));
  s.sync();
  const auto t0 = clock_type::now();
  for (int i = 0; i < repeats; ++i)
    AG_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s.stream()));
  s.sync();
  const double seconds = us_since(t0) * 1e-6;
  return 2.0 * double(bytes) * repeats / seconds * 1e-9;
}

} // namespace ag::floors
