#include "cuda/caching_allocator.hpp"

#include <cstdio>
#include <limits>
#include <string>
#include <utility>

#include <cuda_runtime_api.h>

#include "cuda/cuda_error.hpp"

namespace ag {

caching_allocator::~caching_allocator() { free_all(); }

caching_allocator::caching_allocator(caching_allocator&& other) noexcept
  : device_(other.device_),
    free_(std::move(other.free_)),
    in_use_(std::move(other.in_use_)),
    live_bytes_(std::exchange(other.live_bytes_, 0)),
    cached_bytes_(std::exchange(other.cached_bytes_, 0)) {
  // A moved-from container is only "valid but unspecified"; an empty one frees nothing twice.
  other.free_.clear();
  other.in_use_.clear();
}

caching_allocator& caching_allocator::operator=(caching_allocator&& other) noexcept {
  if (this != &other) {
    free_all();
    device_ = other.device_;
    free_ = std::move(other.free_);
    in_use_ = std::move(other.in_use_);
    live_bytes_ = std::exchange(other.live_bytes_, 0);
    cached_bytes_ = std::exchange(other.cached_bytes_, 0);
    other.free_.clear();
    other.in_use_.clear();
  }
  return *this;
}

std::size_t caching_allocator::round_up(std::size_t bytes) {
  // Small requests round to 512 bytes: above cudaMalloc's 256-byte alignment, so every block keeps
  // it, and coarse enough that tensors of nearly the same size share a free list. Large requests
  // round to 2 MiB: the driver backs big allocations with 2 MiB pages anyway, so the rounding
  // costs no physical memory, and it lets a tensor reuse the block of a slightly different one.
  // Free lists match sizes exactly; the coarse classes are what make reuse likely.
  if (bytes > std::numeric_limits<std::size_t>::max() - large_granularity)
    throw error("caching_allocator: " + std::to_string(bytes) + " bytes is too large to allocate");
  if (bytes == 0)
    return small_granularity;
  const std::size_t g = bytes <= small_limit ? small_granularity : large_granularity;
  return (bytes + g - 1) / g * g;
}

void* caching_allocator::allocate(std::size_t bytes) {
  const std::size_t size = round_up(bytes);

  auto it = free_.find(size);
  if (it != free_.end() && !it->second.empty()) {
    void* p = it->second.back(); // the most recently freed block: likeliest to be in L2
    it->second.pop_back();
    if (it->second.empty())
      free_.erase(it);
    cached_bytes_ -= size;
    in_use_.emplace(p, size);
    live_bytes_ += size;
    return p;
  }

  // Reserve the bookkeeping first, so that a bad_alloc cannot leak a fresh device block.
  in_use_.reserve(in_use_.size() + 1);

  void* p = nullptr;
  cudaError_t status = cudaMalloc(&p, size);
  if (status == cudaErrorMemoryAllocation) {
    // The cache may hold enough memory in blocks of other sizes: give it back and retry once.
    (void)cudaGetLastError(); // an out-of-memory would otherwise surface at the next launch check
    release_cache();
    status = cudaMalloc(&p, size);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      throw cuda_error("cuda:" + std::to_string(device_) + ": out of device memory allocating "
                       + std::to_string(bytes) + " bytes (" + std::to_string(size)
                       + " rounded; " + std::to_string(live_bytes_)
                       + " bytes in use by this stream, its cache released)");
    }
  }
  AG_CUDA_TRY(status); // any other failure (no device, sticky error) names its CUDA error

  in_use_.emplace(p, size);
  live_bytes_ += size;
  return p;
}

void caching_allocator::deallocate(void* ptr, std::size_t bytes) noexcept {
  if (ptr == nullptr)
    return;
  auto it = in_use_.find(ptr);
  if (it == in_use_.end()) {
    // Not ours (or freed twice): freeing it would corrupt another pool, so leave it and say so.
    std::fprintf(stderr, "actorgraph: cuda:%d: deallocate of %p (%zu bytes) that this allocator "
                 "did not hand out; ignored\n", device_, ptr, bytes);
    return;
  }
  const std::size_t size = it->second;
  in_use_.erase(it);
  live_bytes_ -= size;
  try {
    free_[size].push_back(ptr);
    cached_bytes_ += size;
  } catch (...) {
    // No host memory for the free list: hand the block back to the driver instead.
    AG_CUDA_TRY_NOTHROW(cudaFree(ptr));
  }
}

void caching_allocator::release_cache() noexcept {
  for (auto& entry : free_)
    for (void* p : entry.second)
      AG_CUDA_TRY_NOTHROW(cudaFree(p));
  free_.clear();
  cached_bytes_ = 0;
}

void caching_allocator::free_all() noexcept {
  if (free_.empty() && in_use_.empty())
    return;
  // The destructor may run on another thread than the owner (an actor's teardown); cudaFree needs
  // the right device current, and that thread's own binding is put back afterwards.
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) {
    (void)cudaGetLastError();
    previous = -1;
  }
  if (previous != device_)
    AG_CUDA_TRY_NOTHROW(cudaSetDevice(device_));
  release_cache();
  // Blocks still in use at the end belong to nobody any more: the owning stream has been
  // synchronized, so no kernel reads them.
  for (auto& entry : in_use_)
    AG_CUDA_TRY_NOTHROW(cudaFree(entry.first));
  in_use_.clear();
  live_bytes_ = 0;
  if (previous >= 0 && previous != device_)
    AG_CUDA_TRY_NOTHROW(cudaSetDevice(previous));
}

} // namespace ag
