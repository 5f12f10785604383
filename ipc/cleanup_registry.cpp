#include "ipc/cleanup_registry.hpp"

#include <array>
#include <atomic>
#include <csignal>
#include <cstring>

#include <unistd.h>

namespace ag::cleanup {

namespace {

constexpr int path_slots = 256;
constexpr int pid_slots = 256;
constexpr std::size_t path_bytes = 256;

enum : int { free_slot = 0, writing = 1, in_use = 2 };

// Each entry names the process that registered it: a process forked from that one inherits the
// table, and its stop signal must not kill its parent's children or remove its parent's files.
struct path_slot {
  std::atomic<int> state{free_slot};
  bool is_dir = false;
  pid_t owner = 0;
  char path[path_bytes] = {};
};

std::array<path_slot, path_slots> paths;
std::array<std::atomic<pid_t>, pid_slots> pids{};
std::array<std::atomic<pid_t>, pid_slots> pid_owners{};

} // namespace

int remember_path(const std::string& path, bool is_dir) noexcept {
  if (path.size() >= path_bytes)
    return -1;
  for (int i = 0; i < path_slots; ++i) {
    int expected = free_slot;
    if (!paths[i].state.compare_exchange_strong(expected, writing))
      continue;
    std::memcpy(paths[i].path, path.c_str(), path.size() + 1);
    paths[i].is_dir = is_dir;
    paths[i].owner = ::getpid();
    paths[i].state.store(in_use, std::memory_order_release);
    return i;
  }
  return -1;
}

int remember_pid(pid_t pid) noexcept {
  for (int i = 0; i < pid_slots; ++i) {
    pid_t expected = 0; // a slot is taken by its owner first, then filled
    if (pid_owners[i].compare_exchange_strong(expected, ::getpid())) {
      pids[i].store(pid);
      return i;
    }
  }
  return -1;
}

void forget_path(int slot) noexcept {
  if (slot >= 0 && slot < path_slots)
    paths[slot].state.store(free_slot, std::memory_order_release);
}

void forget_pid(int slot) noexcept {
  if (slot >= 0 && slot < pid_slots) {
    pids[slot].store(0);
    pid_owners[slot].store(0);
  }
}

void run() noexcept {
  const pid_t self = ::getpid();
  for (int i = 0; i < pid_slots; ++i)
    if (const pid_t pid = pids[i].load(); pid > 0 && pid_owners[i].load() == self)
      ::kill(pid, SIGKILL);
  for (const bool dirs : {false, true}) // files first, then the directories they were in
    for (auto& s : paths)
      if (s.state.load(std::memory_order_acquire) == in_use && s.is_dir == dirs && s.owner == self)
        dirs ? ::rmdir(s.path) : ::unlink(s.path);
}

} // namespace ag::cleanup
