// Pointers into the runtime's host store that keep it mapped while they live, even past the
// runtime: zero-copy reads of cpu tensors (tensor::host_bytes), and the ranges a user's thread
// writes an upload into (runtime_core::stage).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ipc/tensor_store.hpp"

namespace ag {

class store_views {
public:
  // store.base() + offset, sharing the keeper of the store's mapping; ag::error naming `what` once
  // the runtime stopped.
  std::shared_ptr<std::byte> view(const tensor_store& store, uint64_t offset,
                                  const std::string& what);

  // The runtime is going: while views are alive the store moves into their keeper (its
  // shared-memory name removed now, its mapping gone with the last view); otherwise it stays with
  // the runtime, which releases it as before. Later views are refused.
  void stop(tensor_store& store) noexcept;

private:
  struct keeper {
    tensor_store store;
  };
  std::mutex mutex_;
  std::shared_ptr<keeper> keeper_ = std::make_shared<keeper>();
  bool stopped_ = false;
};

} // namespace ag
