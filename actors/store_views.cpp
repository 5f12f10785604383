#include "actors/store_views.hpp"

#include "actorgraph/error.hpp"

namespace ag {

std::shared_ptr<std::byte> store_views::view(const tensor_store& store, uint64_t offset,
                                             const std::string& what) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (stopped_)
    throw error(what + ": the runtime was destroyed");
  return {keeper_, store.base() + offset};
}

void store_views::stop(tensor_store& store) noexcept {
  std::lock_guard<std::mutex> lock{mutex_};
  stopped_ = true;
  if (keeper_.use_count() > 1) {
    store.unlink();
    keeper_->store = std::move(store);
  }
  keeper_.reset();
}

} // namespace ag
