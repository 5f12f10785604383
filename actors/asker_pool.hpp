// asker_pool: the blocking actors through which the user's threads ask the executor (the sockets
// path's waits, stats, start-up and shutdown), kept from one wait to the next. A scoped actor made
// and ended per wait woke CAF's clock thread each time (its end cancels its timeouts there): a
// thread hop on the path of every wait. One asker serves one wait at a time; one whose wait ended
// without its reply (a deadline, an interrupt) is ended rather than kept, since the reply may still
// come to it. Closed before the actor system ends: a kept actor would keep the system waiting.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <caf/scoped_actor.hpp>

namespace ag {

class asker_pool {
public:
  static constexpr std::size_t most_kept = 16;

  explicit asker_pool(caf::actor_system& sys) : sys_(sys) {}
  ~asker_pool() { close(); }

  // An asker for one wait: one kept, or a new one.
  std::unique_ptr<caf::scoped_actor> take() {
    {
      std::lock_guard<std::mutex> lock{mu_};
      if (!kept_.empty()) {
        auto a = std::move(kept_.back());
        kept_.pop_back();
        return a;
      }
    }
    return std::make_unique<caf::scoped_actor>(sys_);
  }

  // Back once its wait got its reply (nothing more is on its way to it).
  void give_back(std::unique_ptr<caf::scoped_actor> asker) {
    std::unique_lock<std::mutex> lock{mu_};
    if (closed_ || kept_.size() >= most_kept)
      return; // `asker` ends here, after the lock
    kept_.push_back(std::move(asker));
  }

  // Ends every kept asker; those given back later end at once.
  void close() {
    std::vector<std::unique_ptr<caf::scoped_actor>> ending;
    {
      std::lock_guard<std::mutex> lock{mu_};
      closed_ = true;
      ending.swap(kept_);
    }
  }

private:
  caf::actor_system& sys_;
  std::mutex mu_;
  bool closed_ = false;
  std::vector<std::unique_ptr<caf::scoped_actor>> kept_;
};

} // namespace ag
