// Threads that submit work to a runtime again and again until stopped, for the tests of faults
// under load: each piece of work says whether its result was right; an ag::error naming the
// device under test counts as a failure, anything else (a wrong result, an error that names
// another device or none) as wrong. Include after catch2/catch.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <actorgraph/actorgraph.hpp>

namespace ag::test {

class submitters {
public:
  // work(t, i): thread t's i-th piece of work; true when its result was right.
  submitters(int threads, std::string device, std::function<bool(int, int)> work)
    : device_(std::move(device)), work_(std::move(work)), odd_(threads) {
    for (int t = 0; t < threads; ++t)
      pool_.emplace_back([this, t] { run(t); });
  }
  submitters(const submitters&) = delete;
  submitters& operator=(const submitters&) = delete;
  ~submitters() { stop(); }

  void stop() {
    stop_ = true;
    for (auto& th : pool_)
      if (th.joinable())
        th.join();
  }

  long good() const noexcept { return good_.load(); }
  long failed() const noexcept { return failed_.load(); }
  long wrong() const noexcept { return wrong_.load(); }
  // The last error of each thread that did not name the device (read once stopped).
  const std::vector<std::string>& odd() const noexcept { return odd_; }

  // True once `more` right results came after this call, within `limit`.
  bool more_good(long more, std::chrono::milliseconds limit) const {
    const long before = good();
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (good() <= before + more) {
      if (std::chrono::steady_clock::now() > deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    return true;
  }

private:
  void run(int t) {
    for (int i = 0; !stop_.load(); ++i) {
      try {
        if (work_(t, i))
          ++good_;
        else
          ++wrong_;
      } catch (const ag::error& e) {
        ++failed_;
        if (std::string{e.what()}.find(device_) == std::string::npos) {
          odd_[static_cast<std::size_t>(t)] = e.what();
          ++wrong_;
        }
      }
    }
  }

  std::string device_;
  std::function<bool(int, int)> work_;
  std::vector<std::string> odd_;
  std::atomic<bool> stop_{false};
  std::atomic<long> good_{0}, failed_{0}, wrong_{0};
  std::vector<std::thread> pool_;
};

} // namespace ag::test
