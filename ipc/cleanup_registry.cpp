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

struct path_slot {
  std::atomic<int> state{free_slot};
  bool is_dir = false;
  char path[path_bytes] = {};
};

std::array<path_slot, path_slots> paths;
std::array<std::atomic<pid_t>, pid_slots> pids{};

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
    paths[i].state.store(in_use, std::memory_order_release);
    return i;
  }
  return -1;
}

int remember_pid(pid_t pid) noexcept {
  for (int i = 0; i < pid_slots; ++i) {
    pid_t expected = 0;
    if (pids[i].compare_exchange_strong(expected, pid))
      return i;
  }
  return -1;
}

void forget_path(int slot) noexcept {
  if (slot >= 0 && slot < path_slots)
    paths[slot].state.store(free_slot, std::memory_order_release);
}

void forget_pid(int slot) noexcept {
  if (slot >= 0 && slot < pid_slots)
    pids[slot].store(0);
}

void run() noexcept {
  for (auto& p : pids)
    if (const pid_t pid = p.load(); pid > 0)
      ::kill(pid, SIGKILL);
  for (const bool dirs : {false, true}) // files first, then the directories they were in
    for (auto& s : paths)
      if (s.state.load(std::memory_order_acquire) == in_use && s.is_dir == dirs)
        dirs ? ::rmdir(s.path) : ::unlink(s.path);
}

} // namespace ag::cleanup
