#include "ipc/tensor_store.hpp"

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include <sys/mman.h>

#include "actorgraph/error.hpp"

namespace ag {

tensor_store tensor_store::anonymous(std::size_t bytes) {
  if (bytes == 0)
    throw error("tensor store: size must be positive");
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw error("tensor store: cannot reserve " + std::to_string(bytes)
                + " bytes: " + std::strerror(errno));
  return tensor_store{static_cast<std::byte*>(p), bytes};
}

tensor_store::tensor_store(tensor_store&& other) noexcept
  : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)) {}

tensor_store& tensor_store::operator=(tensor_store&& other) noexcept {
  if (this != &other) {
    this->~tensor_store();
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

tensor_store::~tensor_store() {
  if (base_ != nullptr)
    ::munmap(base_, size_);
}

} // namespace ag
