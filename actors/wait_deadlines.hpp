// wait_deadlines: the deadlines of the executor's open waits, behind one timer. A timer of CAF's
// clock per wait (a sync, a read) woke the clock's thread on the path of every wait of the sockets
// path, and kept every answered wait's timer until its deadline passed (60 s of them); here a
// wait is forgotten once answered, and the one timer is armed for the earliest deadline alone.
// A plain class: the executor asks it, tests drive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ag {

class wait_deadlines {
public:
  using time_point = std::chrono::steady_clock::time_point;

  // Wait `wait` ends at `at`. True when the timer must be armed for `at` (none is armed, or
  // the armed one comes later); then call armed(at).
  bool add(uint64_t wait, time_point at) {
    if (auto old = by_wait_.find(wait); old != by_wait_.end())
      by_time_.erase({old->second, wait});
    by_wait_[wait] = at;
    by_time_.emplace(at, wait);
    return armed_.empty() || at < *armed_.begin();
  }
  void armed(time_point at) { armed_.insert(at); }

  // Wait `wait` was answered: its deadline no longer matters.
  void forget(uint64_t wait) {
    if (auto it = by_wait_.find(wait); it != by_wait_.end()) {
      by_time_.erase({it->second, wait});
      by_wait_.erase(it);
    }
  }

  // The timer fired at `now`: the waits whose deadline passed, in deadline order, forgotten.
  std::vector<uint64_t> fired(time_point now) {
    armed_.erase(armed_.begin(), armed_.upper_bound(now)); // those timers went off
    std::vector<uint64_t> due;
    while (!by_time_.empty() && by_time_.begin()->first <= now) {
      due.push_back(by_time_.begin()->second);
      by_wait_.erase(by_time_.begin()->second);
      by_time_.erase(by_time_.begin());
    }
    return due;
  }

  // When the timer must fire next, if it is not armed for then or earlier already.
  std::optional<time_point> rearm() const {
    if (by_time_.empty() || (!armed_.empty() && *armed_.begin() <= by_time_.begin()->first))
      return std::nullopt;
    return by_time_.begin()->first;
  }

  std::size_t size() const noexcept { return by_wait_.size(); }

private:
  std::set<std::pair<time_point, uint64_t>> by_time_;
  std::unordered_map<uint64_t, time_point> by_wait_;
  std::set<time_point> armed_; // timers on their way
};

} // namespace ag
