#include "cuda/cuda_ipc.hpp"
#include "cuda/ipc_files.hpp"

#include <cstring>

#include <cuda.h>

#include "actorgraph/error.hpp"
#include "cuda/cuda_error.hpp"

namespace ag {

namespace {

static_assert(sizeof(cudaIpcMemHandle_t) == 64 && sizeof(cudaIpcEventHandle_t) == 64);

// The driver packs small allocations into larger ones, and a handle maps the whole of one: the
// operand's offset in it comes from the driver (cuMemGetAddressRange, found through the runtime,
// so that nothing links libcuda).
uint64_t offset_in_allocation(const void* ptr, const ag::device& dev) {
  using range_fn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
  static const range_fn range = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault,
                                         &found)
          != cudaSuccess
        || found != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<range_fn>(fn);
  }();
  if (range == nullptr)
    throw error(dev.str() + ": the driver has no cuMemGetAddressRange (needed to export memory "
                            "to another process)");
  CUdeviceptr base = 0;
  size_t size = 0;
  const auto p = reinterpret_cast<CUdeviceptr>(ptr);
  if (range(&base, &size, p) != CUDA_SUCCESS)
    throw error(dev.str() + ": cuMemGetAddressRange failed for an exported operand");
  return static_cast<uint64_t>(p - base);
}

// Closes and erases every entry of `lane` in a map of mappings or events.
template <class Map, class Close>
void erase_lane(Map& map, uint32_t lane, Close close) noexcept {
  for (auto it = map.begin(); it != map.end();) {
    if (it->second.lane != lane) {
      ++it;
      continue;
    }
    close(it->second);
    it = map.erase(it);
  }
}

} // namespace

uint64_t cuda_ipc::export_memory(const void* ptr, cudaStream_t stream, char (&handle)[64],
                                 char (&event)[64]) {
  cudaIpcMemHandle_t h{};
  AG_CUDA_TRY(cudaIpcGetMemHandle(&h, const_cast<void*>(ptr)));
  std::memcpy(handle, &h, sizeof h);
  const uint64_t offset = offset_in_allocation(ptr, dev_);
  if (own_ == nullptr) {
    // The driver backs an interprocess event with a file in /dev/shm: noted, so that it is
    // removed even if this process is killed before it destroys the event (ipc_files.hpp).
    const auto before = mapped_ipc_files();
    cudaEvent_t e = nullptr;
    AG_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventInterprocess));
    cudaIpcEventHandle_t eh{};
    if (const auto st = cudaIpcGetEventHandle(&eh, e); st != cudaSuccess) {
      (void)cudaEventDestroy(e);
      AG_CUDA_TRY(st);
    }
    own_ = e;
    std::memcpy(own_handle_, &eh, sizeof eh);
    note_own_ipc_files(before, mapped_ipc_files());
  }
  AG_CUDA_TRY(cudaEventRecord(own_, stream));
  std::memcpy(event, own_handle_, sizeof own_handle_);
  return offset;
}

// One mapping per exported allocation: the exporter's caching allocator hands the same block
// (hence the same handle) out again, and CUDA maps a handle once per process.
const void* cuda_ipc::import_memory(const char (&handle)[64], uint32_t lane) {
  std::string key(handle, sizeof handle);
  if (auto it = mappings_.find(key); it != mappings_.end())
    return it->second.ptr;
  cudaIpcMemHandle_t h{};
  std::memcpy(&h, handle, sizeof h);
  void* p = nullptr;
  AG_CUDA_TRY(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
  mappings_.emplace(std::move(key), mapping{p, lane});
  return p;
}

void cuda_ipc::wait_export(const char (&event)[64], uint32_t lane, cudaStream_t stream) {
  std::string key(event, sizeof event);
  auto it = events_.find(key);
  if (it == events_.end()) {
    cudaIpcEventHandle_t h{};
    std::memcpy(&h, event, sizeof h);
    cudaEvent_t e = nullptr;
    AG_CUDA_TRY(cudaIpcOpenEventHandle(&e, h));
    it = events_.emplace(std::move(key), opened_event{e, lane}).first;
  }
  AG_CUDA_TRY(cudaStreamWaitEvent(stream, it->second.event, 0));
}

void cuda_ipc::forget(uint32_t lane) noexcept {
  erase_lane(mappings_, lane,
             [](mapping& m) { AG_CUDA_TRY_NOTHROW(cudaIpcCloseMemHandle(m.ptr)); });
  erase_lane(events_, lane,
             [](opened_event& e) { AG_CUDA_TRY_NOTHROW(cudaEventDestroy(e.event)); });
}

bool cuda_ipc::holds(uint32_t lane) const noexcept {
  for (const auto& [key, m] : mappings_)
    if (m.lane == lane)
      return true;
  for (const auto& [key, e] : events_)
    if (e.lane == lane)
      return true;
  return false;
}

void cuda_ipc::close_all() noexcept {
  for (auto& [key, m] : mappings_)
    AG_CUDA_TRY_NOTHROW(cudaIpcCloseMemHandle(m.ptr));
  mappings_.clear();
  for (auto& [key, e] : events_)
    AG_CUDA_TRY_NOTHROW(cudaEventDestroy(e.event));
  events_.clear();
  if (own_ != nullptr)
    AG_CUDA_TRY_NOTHROW(cudaEventDestroy(own_));
  own_ = nullptr;
}

} // namespace ag
