// tensor_store: the host memory that cpu tensors and the host half of every move live in, addressed
// by byte offsets so that every process can map it at its own address. kMemory (this process's
// anonymous memory, thread mode); kFile (a shared-memory file every process maps) arrives with
// process mode. Only the controller allocates, through store_allocator.
#pragma once

#include <cstddef>
#include <type_traits>

namespace ag {

class tensor_store {
public:
  // kMemory: reserves `bytes` of address space; pages are touched only as tensors are written.
  static tensor_store anonymous(std::size_t bytes);

  tensor_store() noexcept = default;
  tensor_store(tensor_store&& other) noexcept;
  tensor_store& operator=(tensor_store&& other) noexcept;
  ~tensor_store();

  std::byte* base() const noexcept { return base_; }
  std::size_t size() const noexcept { return size_; }

  // True when [offset, offset + bytes) lies inside the store.
  bool contains(std::size_t offset, std::size_t bytes) const noexcept {
    return offset <= size_ && bytes <= size_ - offset;
  }

private:
  tensor_store(std::byte* base, std::size_t size) noexcept : base_(base), size_(size) {}

  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
};

static_assert(std::is_nothrow_move_constructible_v<tensor_store>);

} // namespace ag
