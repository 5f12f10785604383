// log_limit: lines logged at a bounded rate. Up to `burst` lines a window go out as they come;
// the rest of that window's lines are counted, and once the window is over one line says how many
// were held back. For what strangers can cause at will (a refused peer per connection attempt): a
// flood of them costs a line a window, not a line each. A plain class, used by one thread; the
// clock is passed in, so tests drive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

namespace ag {

class log_limit {
public:
  using clock = std::chrono::steady_clock;

  // `what` names the lines in the summary ("refused peers").
  log_limit(std::function<void(const std::string&)> out, std::string what, unsigned burst = 10,
            std::chrono::milliseconds window = std::chrono::seconds{1})
    : out_(std::move(out)), what_(std::move(what)), burst_(burst), window_(window) {}

  // One line: out now, or counted if this window had `burst` already.
  void line(const std::string& text, clock::time_point now = clock::now()) {
    tick(now);
    if (sent_ < burst_) {
      ++sent_;
      if (out_)
        out_(text);
    } else {
      ++held_;
    }
  }

  // At a window's end: a line for what it held back, and a new window. Call it now and then
  // (the summary of a flood that stopped is owed).
  void tick(clock::time_point now = clock::now()) {
    if (now - start_ < window_)
      return;
    if (held_ > 0 && out_)
      out_("... and " + std::to_string(held_) + " more " + what_ + " in "
           + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - start_).count())
           + " ms (logged at most " + std::to_string(burst_) + " every "
           + std::to_string(window_.count()) + " ms)");
    start_ = now;
    sent_ = 0;
    held_ = 0;
  }

  uint64_t held() const noexcept { return held_; }

private:
  std::function<void(const std::string&)> out_;
  std::string what_;
  unsigned burst_;
  std::chrono::milliseconds window_;
  clock::time_point start_{};
  unsigned sent_ = 0;
  uint64_t held_ = 0;
};

} // namespace ag
