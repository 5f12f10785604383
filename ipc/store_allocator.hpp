// store_allocator: hands out byte ranges of the tensor store as offsets (first fit over a free map
// that coalesces neighbours). The executor's planner allocates nearly every range; a user's thread
// takes one to write an upload's values into directly (runtime_core::stage), so every call locks.
// Runners only ever see offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace ag {

class store_allocator {
public:
  // Offsets are multiples of this: enough for any float vector load and for cudaMemcpy fast paths.
  static constexpr std::size_t alignment = 256;

  // Called with the end of a range before it is first handed out past every earlier one (the
  // store's high-water mark): empty when the store's memory up to there is there, otherwise why
  // not, and the range is not handed out (tensor_store::reserve_to).
  using reserve_fn = std::function<std::string(uint64_t end)>;

  explicit store_allocator(std::size_t capacity, reserve_fn reserve = {});

  // An offset for `bytes` (zero bytes still get a distinct range), or nothing when full or when
  // the memory behind the range could not be reserved (refusal() says why).
  std::optional<uint64_t> allocate(std::size_t bytes);

  // Why the last allocate() that found room could not reserve it; empty otherwise.
  std::string refusal() const;

  // Returns a range from allocate(offset, bytes of the same call).
  void deallocate(uint64_t offset, std::size_t bytes) noexcept;

  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t live_bytes() const;

private:
  static std::size_t rounded(std::size_t bytes) noexcept {
    return bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  }

  const std::size_t capacity_;
  mutable std::mutex mtx_; // guards what follows
  std::size_t live_ = 0;
  reserve_fn reserve_;
  uint64_t high_water_ = 0; // ranges below it were reserved
  std::string refusal_;
  std::map<uint64_t, std::size_t> free_; // offset -> size, no two adjacent
};

} // namespace ag
