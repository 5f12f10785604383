#include "actors/flow_control.hpp"

#include <algorithm>

#include "actorgraph/error.hpp"
#include "graph/interrupts.hpp"

namespace ag {

// Operator credits are atomics: an operator call takes one with a single atomic add while its lane
// has room and nothing is held; the mutex and the condition variable are for waiting, for upload
// bytes, and for the reasons in errors. A waiter counts itself in waiters_ under the mutex before
// it looks at the counters, and a release looks at waiters_ after changing them (both sequentially
// consistent), so a release either sees the waiter and wakes it, or the waiter sees the release.

flow_control::flow_control(std::vector<std::string> lane_names, limits lim)
  : names_(std::move(lane_names)), lim_(lim), ops_(names_.size()) {
  if (lim_.ops_per_lane == 0)
    throw error("graph_option::max_in_flight_ops must be at least 1");
  if (lim_.bytes == 0)
    throw error("graph_option::max_in_flight_bytes must be at least 1");
  for (auto& n : ops_)
    n.store(0);
}

bool flow_control::bytes_fit(uint64_t bytes) const noexcept {
  return bytes == 0 || bytes_ == 0 || bytes <= lim_.bytes - std::min(bytes_, lim_.bytes);
}

bool flow_control::take(uint32_t lane) noexcept {
  uint64_t n = ops_[lane].load();
  while (n < lim_.ops_per_lane)
    if (ops_[lane].compare_exchange_weak(n, n + 1))
      return true;
  return false;
}

std::string flow_control::why_full(uint32_t lane, uint64_t bytes) const {
  if (held_.load())
    return held_why_;
  if (ops_[lane].load() >= lim_.ops_per_lane)
    return names_[lane] + " has " + std::to_string(ops_[lane].load())
           + " operators unacknowledged (graph_option::max_in_flight_ops)";
  return std::to_string(bytes_) + " bytes of uploads are waiting to be stored and "
         + std::to_string(bytes) + " more do not fit (graph_option::max_in_flight_bytes = "
         + std::to_string(lim_.bytes) + ")";
}

std::string flow_control::acquire(uint32_t lane, uint64_t bytes,
                                  std::chrono::milliseconds timeout) {
  if (lane >= ops_.size())
    return "lane " + std::to_string(lane) + " does not exist";
  if (bytes == 0 && !held_.load() && !closed_.load() && take(lane))
    return {};
  std::unique_lock<std::mutex> lock{mtx_};
  bool taken = false;
  auto ready = [&] {
    if (closed_.load())
      return true;
    if (held_.load() || !bytes_fit(bytes))
      return false;
    return taken = take(lane);
  };
  ++waiters_;
  if (!ready()) {
    ++blocked_;
    const auto deadline = deadline_after(timeout);
    bool in_time = true;
    if (deadline == steady_clock::time_point::max() && !detail::interruptible()) {
      cv_.wait(lock, ready);
    } else {
      // In slices when the thread may be interrupted (the check runs without the lock).
      while (!(in_time = cv_.wait_until(lock, detail::slice_end(deadline), ready))
             && steady_clock::now() < deadline) {
        lock.unlock();
        try {
          detail::check_interrupt("waiting for room");
        } catch (...) {
          lock.lock();
          --waiters_;
          throw;
        }
        lock.lock();
      }
    }
    if (!in_time) {
      --waiters_;
      return "waited " + duration_string(timeout) + " for room: " + why_full(lane, bytes);
    }
  }
  --waiters_;
  if (closed_.load()) {
    if (taken)
      ops_[lane].fetch_sub(1);
    return closed_why_;
  }
  bytes_ += bytes;
  return {};
}

void flow_control::wake() noexcept {
  if (waiters_.load() == 0)
    return;
  { std::lock_guard<std::mutex> lock{mtx_}; }
  cv_.notify_all();
}

void flow_control::release(uint32_t lane, uint64_t ops) noexcept {
  if (ops == 0 || lane >= ops_.size())
    return;
  ops_[lane].fetch_sub(std::min(ops, ops_[lane].load()));
  wake();
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
  if (held_.load())
    return; // the first reason stands until resume
  std::lock_guard<std::mutex> lock{mtx_};
  held_why_ = why.empty() ? std::string{"held"} : std::move(why);
  held_.store(true);
}

void flow_control::resume() noexcept {
  if (!held_.load())
    return;
  {
    std::lock_guard<std::mutex> lock{mtx_};
    held_.store(false);
  }
  cv_.notify_all();
}

bool flow_control::held() const { return held_.load(); }

void flow_control::close(std::string why) noexcept {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    if (!closed_.load()) {
      closed_why_ = why.empty() ? std::string{"closed"} : std::move(why);
      closed_.store(true);
    }
  }
  cv_.notify_all();
}

flow_control::snapshot flow_control::stats() const {
  std::lock_guard<std::mutex> lock{mtx_};
  snapshot s;
  for (const auto& n : ops_)
    s.ops.push_back(n.load());
  s.bytes = bytes_;
  s.blocked = blocked_;
  return s;
}

} // namespace ag
