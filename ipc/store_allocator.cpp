#include "ipc/store_allocator.hpp"

#include <iterator>
#include <utility>

namespace ag {

store_allocator::store_allocator(std::size_t capacity, reserve_fn reserve)
  : capacity_(capacity / alignment * alignment), reserve_(std::move(reserve)) {
  if (capacity_ > 0)
    free_.emplace(0, capacity_);
}

std::optional<uint64_t> store_allocator::allocate(std::size_t bytes) {
  const std::size_t need = rounded(bytes);
  if (need < bytes)
    return std::nullopt;
  std::lock_guard<std::mutex> lock{mtx_};
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need)
      continue;
    const uint64_t offset = it->first;
    if (reserve_ && offset + need > high_water_) {
      refusal_ = reserve_(offset + need);
      if (!refusal_.empty())
        return std::nullopt;
      high_water_ = offset + need;
    }
    refusal_.clear();
    const std::size_t rest = it->second - need;
    free_.erase(it);
    if (rest > 0)
      free_.emplace(offset + need, rest);
    live_ += need;
    return offset;
  }
  return std::nullopt;
}

void store_allocator::deallocate(uint64_t offset, std::size_t bytes) noexcept {
  std::size_t size = rounded(bytes);
  std::lock_guard<std::mutex> lock{mtx_};
  live_ -= size;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  free_.emplace_hint(next, offset, size);
}

std::string store_allocator::refusal() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return refusal_;
}

std::size_t store_allocator::live_bytes() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return live_;
}

} // namespace ag
