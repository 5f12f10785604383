#include "actors/broadcast_window.hpp"

namespace ag {

uint64_t broadcast_window::sent(uint64_t bytes) {
  bytes_ += bytes;
  window_.push_back({++seq_, bytes_});
  return seq_;
}

uint64_t broadcast_window::behind_bytes(uint64_t read) const {
  if (read >= seq_)
    return 0;
  const uint64_t read_bytes =
    read <= base_seq_ ? base_bytes_ : window_[read - base_seq_ - 1].cumulative;
  return bytes_ - read_bytes;
}

void broadcast_window::forget(uint64_t read_by_all) {
  while (!window_.empty() && window_.front().seq <= read_by_all) {
    base_seq_ = window_.front().seq;
    base_bytes_ = window_.front().cumulative;
    window_.pop_front();
  }
}

} // namespace ag
