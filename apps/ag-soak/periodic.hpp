// periodic: runs a function on a thread of its own every `period` until stopped (ag-soak samples
// memory and the runtime's in-flight count with it, beside the thread that floods the runtime).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace ag::soak {

class periodic {
public:
  periodic(std::chrono::milliseconds period, std::function<void()> fn)
    : period_(period), fn_(std::move(fn)), thread_([this] { loop(); }) {}

  ~periodic() { stop(); }

  periodic(const periodic&) = delete;
  periodic& operator=(const periodic&) = delete;

  // Runs the function a last time, then ends the thread; later calls do nothing.
  void stop() {
    {
      std::lock_guard<std::mutex> lock{mtx_};
      if (stop_)
        return;
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lock{mtx_};
    for (;;) {
      lock.unlock();
      fn_();
      lock.lock();
      if (stop_)
        return;
      cv_.wait_for(lock, period_, [this] { return stop_; });
      // One more sample after stop(), so that the last moments are seen too.
    }
  }

  const std::chrono::milliseconds period_;
  const std::function<void()> fn_;
  std::mutex mtx_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_; // last: starts once the members above exist
};

} // namespace ag::soak
