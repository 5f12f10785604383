// Deadline arithmetic that cannot overflow. Every timeout option takes
// std::chrono::milliseconds::max() as "no deadline"; a sum or a point in time past what the type
// holds saturates to that maximum instead of wrapping round into the past (which made every wait
// fail at once).
#pragma once

#include <chrono>
#include <limits>
#include <string>

namespace ag {

using steady_clock = std::chrono::steady_clock;

// True when d means "no deadline".
inline bool no_deadline(std::chrono::milliseconds d) noexcept {
  return d == std::chrono::milliseconds::max();
}

// A timeout option as the runtime uses it: anything over 100 years is "no deadline" (CAF and
// <chrono> add timeouts to nanosecond clocks, which a value near milliseconds::max() overflows).
inline std::chrono::milliseconds normalized(std::chrono::milliseconds d) noexcept {
  using years100 = std::chrono::duration<int64_t, std::ratio<int64_t{100} * 365 * 24 * 3600>>;
  return d >= std::chrono::duration_cast<std::chrono::milliseconds>(years100{1})
           ? std::chrono::milliseconds::max()
           : d;
}

// The deadline of a child's exit at shutdown: wait_timeout, or 60 s when waits have none (a
// child that never exits must not keep the runtime from ending).
inline std::chrono::milliseconds stop_timeout(std::chrono::milliseconds wait) noexcept {
  return no_deadline(wait) ? std::chrono::milliseconds{60000} : wait;
}

// a + b, saturating at milliseconds::max() (so "no deadline" plus a grace is still none).
inline std::chrono::milliseconds saturating_add(std::chrono::milliseconds a,
                                                std::chrono::milliseconds b) noexcept {
  using rep = std::chrono::milliseconds::rep;
  const rep max = std::numeric_limits<rep>::max();
  if (a.count() > 0 && b.count() > max - a.count())
    return std::chrono::milliseconds::max();
  return a + b;
}

// now + d, or time_point::max() when d is "no deadline" or the sum would not fit.
inline steady_clock::time_point deadline_after(std::chrono::milliseconds d,
                                               steady_clock::time_point now = steady_clock::now()) {
  using namespace std::chrono;
  const auto room = duration_cast<milliseconds>(steady_clock::time_point::max() - now);
  if (no_deadline(d) || d >= room)
    return steady_clock::time_point::max();
  return now + duration_cast<steady_clock::duration>(d);
}

// "5000 ms", or "no deadline".
inline std::string duration_string(std::chrono::milliseconds d) {
  return no_deadline(d) ? std::string{"no deadline"} : std::to_string(d.count()) + " ms";
}

} // namespace ag
