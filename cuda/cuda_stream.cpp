// The kernel stream of cuda:N: one non-blocking CUDA stream, a cuBLAS handle bound to it and a
// caching allocator, so that a stream actor's operators run in order on its GPU without a driver
// allocation per operator.
//
// Thread contract: a cuda_stream is used only from the thread that created it (the stream actor's
// own thread). The constructor binds that thread to the GPU with cudaSetDevice, once, and no method
// sets it again; doing so per call would cost time on every kernel for a case that does not occur.
// Only the destructor rebinds, since an actor may be torn down from elsewhere.
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "actorgraph/error.hpp"
#include "cuda/caching_allocator.hpp"
#include "cuda/cublas_gemm.hpp"
#include "cuda/cuda_error.hpp"
#include "cuda/cuda_graph.hpp"
#include "cuda/cuda_ipc.hpp"
#include "cuda/cuda_kernels.cuh"
#include "cuda/kernel_stream.hpp"

namespace ag {

namespace {

std::string device_name(int index) { return "cuda:" + std::to_string(index); }

// GPUs the driver shows; 0 without a driver or a GPU.
int visible_gpus() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    // No driver or no GPU: not an error for the caller, which falls back to sim devices. Clear it
    // so that it does not surface at a later, unrelated check.
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

// AG_CUDA_ORDINALS as a list (empty when unset); read once. An entry that is no GPU: {-1}.
const std::vector<int>& ordinal_map() {
  static const std::vector<int> map = [] {
    std::vector<int> m;
    const char* text = std::getenv("AG_CUDA_ORDINALS");
    if (text == nullptr || *text == '\0')
      return m;
    const int gpus = visible_gpus();
    std::string s{text};
    for (std::size_t at = 0; at <= s.size();) {
      const auto comma = std::min(s.find(',', at), s.size());
      const std::string entry = s.substr(at, comma - at);
      char* end = nullptr;
      const long v = std::strtol(entry.c_str(), &end, 10);
      if (entry.empty() || *end != '\0' || v < 0 || v >= gpus)
        return std::vector<int>{-1};
      m.push_back(static_cast<int>(v));
      at = comma + 1;
    }
    return m;
  }();
  return map;
}

// Checks index and binds the calling thread to its GPU; returns index, for a member initializer.
int bind_device(int index) {
  const int count = cuda_device_count();
  if (index < 0 || index >= count)
    throw error(device_name(index) + ": only " + std::to_string(count)
                + " CUDA devices visible");
  AG_CUDA_TRY(cudaSetDevice(cuda_ordinal(index)));
  return index;
}

struct stream_deleter {
  void operator()(cudaStream_t s) const noexcept { AG_CUDA_TRY_NOTHROW(cudaStreamDestroy(s)); }
};
using stream_ptr = std::unique_ptr<CUstream_st, stream_deleter>;

struct event_deleter {
  void operator()(cudaEvent_t e) const noexcept { AG_CUDA_TRY_NOTHROW(cudaEventDestroy(e)); }
};
using event_ptr = std::unique_ptr<CUevent_st, event_deleter>;

struct cublas_deleter {
  void operator()(cublasHandle_t h) const noexcept {
    AG_CUBLAS_TRY_NOTHROW(cublas::get().destroy(h));
  }
};
using cublas_ptr = std::unique_ptr<cublasContext, cublas_deleter>;

stream_ptr make_stream_handle() {
  cudaStream_t s = nullptr;
  // Non-blocking: the legacy default stream (which other libraries in the process may use) must not
  // serialize with this one.
  AG_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return stream_ptr(s);
}

cublas_ptr make_cublas_handle(cudaStream_t stream) {
  const auto& api = cublas::get();
  cublasHandle_t h = nullptr;
  AG_CUBLAS_TRY(api.create(&h));
  cublas_ptr owned(h);
  AG_CUBLAS_TRY(api.set_stream(h, stream));
  // Full FP32 (no TF32 tensor cores): results stay within 1e-4 of the CPU reference, which users
  // and tests compare against.
  AG_CUBLAS_TRY(api.set_math_mode(h, CUBLAS_DEFAULT_MATH));
  return owned;
}

// Host memory is pinned (cudaHostRegister) in chunks, the first time a copy touches a chunk: a
// runtime's start-up does not wait to pin a store mostly never used, and pins only what copies
// use. Pinning is per process and mapping, shared by every stream of the process (two GPUs in
// thread mode share the store): a chunk stays pinned while any stream still uses it, and the last
// one unpins it, after synchronizing its own stream.
constexpr std::size_t pin_chunk = std::size_t{64} << 20;

class pinned_chunks {
public:
  static pinned_chunks& get() {
    static pinned_chunks instance;
    return instance;
  }

  // Pins [base, base + bytes) unless pinned already; one more user either way.
  void acquire(std::byte* base, std::size_t bytes) {
    std::lock_guard<std::mutex> guard{mu_};
    auto& c = chunks_[base];
    if (c.users++ > 0)
      return;
    const cudaError_t status = cudaHostRegister(base, bytes, cudaHostRegisterPortable);
    if (status == cudaErrorHostMemoryAlreadyRegistered) { // pinned by someone else: theirs
      (void)cudaGetLastError();
      c.owned = false;
      return;
    }
    if (status != cudaSuccess) {
      chunks_.erase(base);
      (void)cudaGetLastError();
      throw error("cudaHostRegister of " + std::to_string(bytes) + " bytes of host memory (to pin "
                  "the tensor store for copies) failed: " + cudaGetErrorName(status) + " ("
                  + cudaGetErrorString(status) + ")");
    }
    c.owned = true;
  }

  void release(std::byte* base) noexcept {
    std::lock_guard<std::mutex> guard{mu_};
    auto it = chunks_.find(base);
    if (it == chunks_.end() || --it->second.users > 0)
      return;
    if (it->second.owned)
      AG_CUDA_TRY_NOTHROW(cudaHostUnregister(base));
    chunks_.erase(it);
  }

private:
  struct chunk {
    int users = 0;
    bool owned = false;
  };
  std::mutex mu_;
  std::map<std::byte*, chunk> chunks_;
};

// One host region a stream copies to and from (the tensor store), and the chunks of it this
// stream has pinned so far.
struct host_region {
  std::byte* base = nullptr;
  std::size_t bytes = 0;
  std::vector<bool> pinned; // per pin_chunk

  bool contains(const void* p) const noexcept {
    const auto* b = static_cast<const std::byte*>(p);
    return b >= base && b < base + bytes;
  }
};

class cuda_stream final : public kernel_stream {
public:
  explicit cuda_stream(int index)
    : index_(bind_device(index)),
      gpu_(cuda_ordinal(index_)),
      allocator_(gpu_),
      stream_(make_stream_handle()),
      sum_scratch_(static_cast<double*>(allocator_.allocate(cuda::sum_scratch_bytes()))),
      ipc_(ag::device::cuda(index_)) {
    void* fault = nullptr;
    AG_CUDA_TRY(cudaHostAlloc(&fault, fault_words * sizeof(int64_t), cudaHostAllocMapped));
    fault_ = static_cast<int64_t*>(fault);
    std::fill(fault_, fault_ + fault_words, 0);
    void* on_device = nullptr;
    if (const auto st = cudaHostGetDevicePointer(&on_device, fault, 0); st != cudaSuccess) {
      (void)cudaFreeHost(fault);
      AG_CUDA_TRY(st);
    }
    fault_on_device_ = static_cast<int64_t*>(on_device);
  }

  // Members are destroyed in reverse: cuBLAS, then the stream, then the allocator, whose blocks
  // no queued kernel reads any more once the stream has been synchronized here.
  ~cuda_stream() override {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != gpu_)
      AG_CUDA_TRY_NOTHROW(cudaSetDevice(gpu_));
    AG_CUDA_TRY_NOTHROW(cudaStreamSynchronize(stream_.get()));
    ipc_.close_all();
    for (auto& r : regions_)
      unpin(r);
    AG_CUDA_TRY_NOTHROW(cudaFreeHost(fault_));
  }

  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;

  ag::device device() const noexcept override { return ag::device::cuda(index_); }

  void* allocate(std::size_t bytes) override { return allocator_.allocate(bytes); }

  // Back to the cache at once, although kernels queued on this stream may still read the block:
  // whoever gets it next queues its work on this same stream, after theirs, and no other stream
  // ever sees this allocator's blocks.
  void deallocate(void* ptr, std::size_t bytes) noexcept override {
    allocator_.deallocate(ptr, bytes);
  }

  void fill(dtype t, void* out, std::size_t count, double value) override {
    cuda::fill(t, out, count, fill_bits(t, value), stream_.get());
  }

  void elementwise(const elementwise_call& call) override {
    cuda::elementwise(call, stream_.get());
  }

  void rows(const row_call& call) override {
    row_call c = call;
    c.fault = fault_on_device_;
    cuda::rows(c, stream_.get());
  }

  void random(random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first,
              float a, float b) override {
    cuda::random(kind, out, count, seed, first, a, b, stream_.get());
  }

  // The scratch is shared by every sum: they run one after the other on this stream.
  void sum(const float* a, float* out, std::size_t count) override {
    cuda::sum(a, out, count, sum_scratch_, stream_.get());
  }

  void matmul(const matmul_call& call) override {
    if (!cublas_) // created with the first matmul: see cuda/cublas_loader.hpp
      cublas_ = make_cublas_handle(stream_.get());
    cuda::gemm(cublas_.get(), call, stream_.get(), device_name(index_));
  }

  void copy(void* dst, bool dst_on_host, const void* src, bool src_on_host,
            std::size_t bytes) override {
    if (bytes == 0)
      return;
    if (dst_on_host && src_on_host) {
      // cudaMemcpyAsync between pageable host buffers runs at once, not in stream order; wait for
      // earlier device-to-host copies into src, then copy on the CPU.
      synchronize();
      std::memcpy(dst, src, bytes);
      return;
    }
    // One copy per pinned chunk it touches: CUDA looks a registered pointer up by the range it
    // was registered with, and refuses a copy that runs past its end into the next chunk.
    const void* host = dst_on_host ? dst : src;
    std::size_t done = 0;
    while (done < bytes) {
      const std::size_t n = pin(static_cast<const std::byte*>(host) + done, bytes - done);
      // With unified addressing the pointers say where they live; cudaMemcpyDefault lets a
      // mislabelled side still copy correctly rather than fault.
      AG_CUDA_TRY(cudaMemcpyAsync(static_cast<std::byte*>(dst) + done,
                                  static_cast<const std::byte*>(src) + done, n, cudaMemcpyDefault,
                                  stream_.get()));
      done += n;
    }
  }

  // Pins nothing yet: copies pin the chunks they touch (pinned_chunks above).
  void register_host(void* base, std::size_t bytes) override {
    if (base == nullptr || bytes == 0)
      return;
    for (const auto& r : regions_)
      if (r.base == base)
        return;
    host_region r;
    r.base = static_cast<std::byte*>(base);
    r.bytes = bytes;
    r.pinned.assign((bytes + pin_chunk - 1) / pin_chunk, false);
    regions_.push_back(std::move(r));
  }

  void unregister_host(void* base) noexcept override {
    for (auto it = regions_.begin(); it != regions_.end(); ++it) {
      if (it->base != base)
        continue;
      // Unpinning under an asynchronous copy would leave it reading unpinned pages.
      AG_CUDA_TRY_NOTHROW(cudaStreamSynchronize(stream_.get()));
      unpin(*it);
      regions_.erase(it);
      return;
    }
  }

  // Peer access is enabled once per peer GPU; without it the driver still copies (through the
  // host), so only a sum, whose kernel reads the peer's memory, needs it.
  void copy_peer(void* dst, const void* src, const ag::device& from, std::size_t bytes) override {
    if (bytes == 0)
      return;
    const int peer = cuda_ordinal(from.index);
    reach(from, false);
    AG_CUDA_TRY(cudaMemcpyPeerAsync(dst, gpu_, src, peer, bytes, stream_.get()));
  }

  void sum_peers(float* out, const float* const* parts, const ag::device* from,
                 std::size_t n_parts, std::size_t count) override {
    for (std::size_t r = 0; r < n_parts; ++r)
      reach(from[r], true);
    cuda::sum_parts(out, parts, n_parts, count, stream_.get());
  }

  uint64_t export_memory(const void* ptr, char (&handle)[64], char (&event)[64]) override {
    return ipc_.export_memory(ptr, stream_.get(), handle, event);
  }

  const void* import_memory(const char (&handle)[64], uint32_t lane) override {
    return ipc_.import_memory(handle, lane);
  }

  void wait_export(const char (&event)[64], uint32_t lane) override {
    ipc_.wait_export(event, lane, stream_.get());
  }

  // The event lives as long as this stream; its readers are streams of this process, which end
  // with the runtime that ends this one.
  void record_local(char (&event)[64]) override {
    if (!local_event_) {
      cudaEvent_t e = nullptr;
      AG_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      local_event_.reset(e);
    }
    AG_CUDA_TRY(cudaEventRecord(local_event_.get(), stream_.get()));
    cudaEvent_t e = local_event_.get();
    std::memset(event, 0, sizeof event);
    std::memcpy(event, &e, sizeof e);
  }

  void wait_local(const char (&event)[64]) override {
    cudaEvent_t e = nullptr;
    std::memcpy(&e, event, sizeof e);
    if (e == nullptr)
      throw error(device().str() + ": a peer's export names no event");
    AG_CUDA_TRY(cudaStreamWaitEvent(stream_.get(), e, 0));
  }

  // Queued copies may still read the mappings: the stream is synchronized first.
  void forget_imports(uint32_t lane) noexcept override {
    if (!ipc_.holds(lane))
      return;
    AG_CUDA_TRY_NOTHROW(cudaStreamSynchronize(stream_.get()));
    ipc_.forget(lane);
  }

  // Also where a failed kernel reports: errors while running are sticky and surface here, and an
  // index out of range an embedding or gather met (row_call::fault) is an error here too.
  void synchronize() override {
    AG_CUDA_TRY(cudaStreamSynchronize(stream_.get()));
    volatile int64_t* f = fault_;
    if (f[0] == 0)
      return;
    const auto kind = static_cast<op_kind>(f[4]);
    const auto what = index_out_of_range(kind, static_cast<uint64_t>(f[1]), f[2],
                                         static_cast<uint64_t>(f[3]));
    f[0] = 0; // the next one reports again
    throw error(what);
  }

  capture_outcome capture(const std::vector<recorded_call>& calls,
                          std::unique_ptr<stream_graph>& graph) override {
    return cuda::capture(*this, stream_.get(), calls, graph);
  }

  void launch(stream_graph& graph) override {
    cuda::launch(stream_.get(), graph, device().str());
  }

private:
  // Enables this GPU's access to the memory of `from`'s GPU, once; with `needed`, a GPU it cannot
  // reach is an error.
  void reach(const ag::device& from, bool needed) {
    if (from.type != ag::device::kind::cuda)
      throw error(device().str() + ": " + from.str() + " is not a CUDA device");
    const int peer = cuda_ordinal(from.index);
    if (peer == gpu_ || std::find(reached_.begin(), reached_.end(), peer) != reached_.end())
      return;
    int can = 0;
    AG_CUDA_TRY(cudaDeviceCanAccessPeer(&can, gpu_, peer));
    if (can == 0) {
      if (needed)
        throw error(device().str() + " cannot read the memory of " + from.str()
                    + " (no peer access between their GPUs)");
      return;
    }
    const cudaError_t st = cudaDeviceEnablePeerAccess(peer, 0);
    if (st == cudaErrorPeerAccessAlreadyEnabled)
      (void)cudaGetLastError();
    else
      AG_CUDA_TRY(st);
    reached_.push_back(peer);
  }

  int index_;
  int gpu_; // the GPU it runs on (cuda_ordinal)
  std::vector<int> reached_; // peer GPUs this one's access is enabled to
  caching_allocator allocator_;
  stream_ptr stream_;
  cublas_ptr cublas_;
  double* sum_scratch_; // from allocator_, which frees it
  // Mapped host memory the pick kernels report an index out of range in (row_call::fault).
  static constexpr std::size_t fault_words = 5;
  int64_t* fault_ = nullptr;
  int64_t* fault_on_device_ = nullptr;
  std::vector<host_region> regions_; // registered host memory, pinned chunk by chunk
  cuda_ipc ipc_; // exports and imports across child processes; closed by the destructor
  event_ptr local_event_; // recorded by exports to peer lanes of this process
  // For a copy from or to host memory at p of `bytes`: pins the chunk of a registered region that
  // p lies in, and returns how many of the bytes lie in that chunk (all of them when p lies in no
  // region).
  std::size_t pin(const void* p, std::size_t bytes) {
    for (auto& r : regions_) {
      if (!r.contains(p))
        continue;
      const auto offset = static_cast<std::size_t>(static_cast<const std::byte*>(p) - r.base);
      const std::size_t c = offset / pin_chunk;
      const std::size_t at = c * pin_chunk;
      const std::size_t chunk_bytes = std::min(pin_chunk, r.bytes - at);
      if (!r.pinned[c]) {
        pinned_chunks::get().acquire(r.base + at, chunk_bytes);
        r.pinned[c] = true;
      }
      return std::min(bytes, at + chunk_bytes - offset);
    }
    return bytes;
  }

  void unpin(host_region& r) noexcept {
    for (std::size_t c = 0; c < r.pinned.size(); ++c)
      if (r.pinned[c])
        pinned_chunks::get().release(r.base + c * pin_chunk);
    std::fill(r.pinned.begin(), r.pinned.end(), false);
  }
};

} // namespace

std::unique_ptr<kernel_stream> make_cuda_stream(int index) {
  return std::make_unique<cuda_stream>(index);
}

int cuda_device_count() noexcept {
  try {
    const auto& map = ordinal_map();
    if (map.empty())
      return visible_gpus();
    return map.front() < 0 ? 0 : static_cast<int>(map.size());
  } catch (...) { // the map's strings: out of memory
    return 0;
  }
}

int cuda_ordinal(int index) noexcept {
  const auto& map = ordinal_map();
  if (map.empty() || index < 0 || static_cast<std::size_t>(index) >= map.size() || map[0] < 0)
    return index;
  return map[static_cast<std::size_t>(index)];
}

void cuda_stream_wait(std::intptr_t consumer, const char (&event)[64]) {
  cudaEvent_t e = nullptr;
  std::memcpy(&e, event, sizeof e);
  if (e == nullptr)
    throw error("a CUDA stream cannot wait for an export that names no event");
  cudaStream_t s = consumer == 1   ? cudaStreamLegacy
                   : consumer == 2 ? cudaStreamPerThread
                                   : reinterpret_cast<cudaStream_t>(consumer);
  AG_CUDA_TRY(cudaStreamWaitEvent(s, e, 0));
}

bool cuda_peer_access(int a, int b) noexcept {
  const int count = cuda_device_count();
  if (a < 0 || b < 0 || a >= count || b >= count)
    return false;
  const int ga = cuda_ordinal(a), gb = cuda_ordinal(b);
  if (ga == gb)
    return true;
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, ga, gb) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return can != 0;
}

} // namespace ag
