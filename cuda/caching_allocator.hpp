// caching_allocator: the device memory of one GPU stream, kept in per-size free lists so that an
// operator's operands cost no cudaMalloc/cudaFree (both synchronize the device and take tens of
// microseconds). The seed's per-device memory pool.
//
// Not thread-safe, on purpose: one stream actor owns one allocator and calls it from the thread
// bound to its GPU, so a lock would only cost time. Every call must come from a thread whose current
// device (cudaSetDevice) is device(); the destructor binds it itself.
//
// The header needs no CUDA include path, so tests can inspect live and cached bytes directly.
#pragma once

#include <cstddef>
#include <map>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace ag {

class caching_allocator {
public:
  // Requests up to this size round up to a multiple of small_granularity, larger ones to a multiple
  // of large_granularity; see round_up for why.
  static constexpr std::size_t small_granularity = std::size_t{512};
  static constexpr std::size_t large_granularity = std::size_t{2} << 20;
  static constexpr std::size_t small_limit = std::size_t{1} << 20;

  explicit caching_allocator(int device) noexcept : device_(device) {}
  ~caching_allocator();

  caching_allocator(const caching_allocator&) = delete;
  caching_allocator& operator=(const caching_allocator&) = delete;
  caching_allocator(caching_allocator&& other) noexcept;
  caching_allocator& operator=(caching_allocator&& other) noexcept;

  // A block of at least bytes (0 gives a distinct block too), reused from the cache when one of the
  // same rounded size is free. On out-of-memory it frees the cache and retries once, then throws
  // ag::error naming the device and the bytes.
  void* allocate(std::size_t bytes);

  // Returns ptr to the cache. The block may still be read by kernels queued on the owning stream:
  // that is safe because its next user is queued on the same stream, hence runs after them. bytes
  // is only a cross-check; the allocator remembers each block's size.
  void deallocate(void* ptr, std::size_t bytes) noexcept;

  // cudaFree of every cached (free) block; blocks in use stay.
  void release_cache() noexcept;

  int device() const noexcept { return device_; }
  // Rounded bytes handed out and not yet returned.
  std::size_t live_bytes() const noexcept { return live_bytes_; }
  // Rounded bytes held in the free lists.
  std::size_t cached_bytes() const noexcept { return cached_bytes_; }

  // The size class of a request; throws ag::error when bytes is too large to round.
  static std::size_t round_up(std::size_t bytes);

private:
  void free_all() noexcept;

  int device_;
  std::map<std::size_t, std::vector<void*>> free_; // rounded size -> free blocks of that size
  std::unordered_map<void*, std::size_t> in_use_;  // block -> rounded size
  std::size_t live_bytes_ = 0;
  std::size_t cached_bytes_ = 0;
};

static_assert(std::is_nothrow_move_constructible_v<caching_allocator>);
static_assert(std::is_nothrow_move_assignable_v<caching_allocator>);

} // namespace ag
