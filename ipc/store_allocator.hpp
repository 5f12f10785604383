// store_allocator: hands out byte ranges of the tensor store as offsets (first fit over a free map
// that coalesces neighbours). Owned by the executor, the only allocator of the store; runners only
// ever see offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace ag {

class store_allocator {
public:
  // Offsets are multiples of this: enough for any float vector load and for cudaMemcpy fast paths.
  static constexpr std::size_t alignment = 256;

  explicit store_allocator(std::size_t capacity);

  // An offset for `bytes` (zero bytes still get a distinct range), or nothing when full.
  std::optional<uint64_t> allocate(std::size_t bytes);

  // Returns a range from allocate(offset, bytes of the same call).
  void deallocate(uint64_t offset, std::size_t bytes) noexcept;

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t live_bytes() const noexcept { return live_; }

private:
  static std::size_t rounded(std::size_t bytes) noexcept {
    return bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  }

  std::size_t capacity_;
  std::size_t live_ = 0;
  std::map<uint64_t, std::size_t> free_; // offset -> size, no two adjacent
};

} // namespace ag
