#include "actors/fork_guard.hpp"

#include <atomic>
#include <mutex>

#include <pthread.h>
#include <unistd.h>

#include "actorgraph/error.hpp"

namespace ag {

namespace {

// Counts the forks this process descends from; a forked child's first act is to count one more.
std::atomic<uint64_t> fork_generation{0};

void count_fork() noexcept { fork_generation.fetch_add(1, std::memory_order_relaxed); }

uint64_t generation() noexcept {
  static std::once_flag registered;
  std::call_once(registered, [] { ::pthread_atfork(nullptr, nullptr, count_fork); });
  return fork_generation.load(std::memory_order_relaxed);
}

} // namespace

fork_guard::fork_guard() noexcept : generation_(generation()), pid_(::getpid()) {}

bool fork_guard::forked() const noexcept {
  return fork_generation.load(std::memory_order_relaxed) != generation_;
}

void fork_guard::refuse(const std::string& what) const {
  throw error(what + ": this runtime belongs to process " + std::to_string(pid_) + "; process "
              + std::to_string(::getpid())
              + " was forked from it and cannot use it (its actors, threads and children stay with "
                "the parent): make a new runtime in the forked process, or fork before making one");
}

} // namespace ag
