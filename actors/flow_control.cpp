#include "actors/flow_control.hpp"

#include <algorithm>

#include "actorgraph/error.hpp"

namespace ag {

flow_control::flow_control(std::vector<std::string> lane_names, limits lim)
  : names_(std::move(lane_names)), lim_(lim), ops_(names_.size(), 0) {
  if (lim_.ops_per_lane == 0)
    throw error("graph_option::max_in_flight_ops must be at least 1");
  if (lim_.bytes == 0)
    throw error("graph_option::max_in_flight_bytes must be at least 1");
}

bool flow_control::fits(uint32_t lane, uint64_t bytes) const noexcept {
  if (!held_.empty() || ops_[lane] >= lim_.ops_per_lane)
    return false;
  return bytes == 0 || bytes_ == 0 || bytes <= lim_.bytes - std::min(bytes_, lim_.bytes);
}

std::string flow_control::why_full(uint32_t lane, uint64_t bytes) const {
  if (!held_.empty())
    return held_;
  if (ops_[lane] >= lim_.ops_per_lane)
    return names_[lane] + " has " + std::to_string(ops_[lane])
           + " operators unacknowledged (graph_option::max_in_flight_ops)";
  return std::to_string(bytes_) + " bytes of uploads are waiting to be stored and " + std::to_string(bytes)
         + " more do not fit (graph_option::max_in_flight_bytes = " + std::to_string(lim_.bytes)
         + ")";
}

std::string flow_control::acquire(uint32_t lane, uint64_t bytes,
                                  std::chrono::milliseconds timeout) {
  if (lane >= ops_.size())
    return "lane " + std::to_string(lane) + " does not exist";
  std::unique_lock<std::mutex> lock{mtx_};
  auto ready = [&] { return !closed_.empty() || fits(lane, bytes); };
  if (!ready()) {
    ++blocked_;
    const auto deadline = deadline_after(timeout);
    if (deadline == steady_clock::time_point::max())
      cv_.wait(lock, ready);
    else if (!cv_.wait_until(lock, deadline, ready))
      return "waited " + duration_string(timeout) + " for room: " + why_full(lane, bytes);
  }
  if (!closed_.empty())
    return closed_;
  ++ops_[lane];
  bytes_ += bytes;
  return {};
}

void flow_control::release(uint32_t lane, uint64_t ops) noexcept {
  if (ops == 0 || lane >= ops_.size())
    return;
  {
    std::lock_guard<std::mutex> lock{mtx_};
    ops_[lane] -= std::min(ops, ops_[lane]);
  }
  cv_.notify_all();
}

void flow_control::release_bytes(uint64_t bytes) noexcept {
  if (bytes == 0)
    return;
  {
    std::lock_guard<std::mutex> lock{mtx_};
    bytes_ -= std::min(bytes, bytes_);
  }
  cv_.notify_all();
}

void flow_control::hold(std::string why) {
  std::lock_guard<std::mutex> lock{mtx_};
  held_ = why.empty() ? std::string{"held"} : std::move(why);
}

void flow_control::resume() noexcept {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    if (held_.empty())
      return;
    held_.clear();
  }
  cv_.notify_all();
}

bool flow_control::held() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return !held_.empty();
}

void flow_control::close(std::string why) noexcept {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    if (closed_.empty())
      closed_ = why.empty() ? std::string{"closed"} : std::move(why);
  }
  cv_.notify_all();
}

flow_control::snapshot flow_control::stats() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return {ops_, bytes_, blocked_};
}

} // namespace ag
