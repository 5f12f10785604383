#include "cuda/ipc_files.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace ag {

namespace {

struct registry {
  std::mutex mu;
  std::vector<std::string> files;
  ipc_files_observer observer;
};

registry& the_registry() {
  static registry r; // never destroyed before the streams that note files
  return r;
}

} // namespace

void observe_ipc_files(ipc_files_observer observer) {
  auto& r = the_registry();
  std::lock_guard<std::mutex> lock{r.mu};
  r.observer = std::move(observer);
  if (r.observer && !r.files.empty())
    r.observer(r.files);
}

std::vector<std::string> mapped_ipc_files() {
  std::vector<std::string> out;
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr)
    return out;
  char line[1024];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    const char* at = std::strstr(line, "/dev/shm/cuda.shm.");
    if (at == nullptr)
      continue;
    std::string name{at + std::strlen("/dev/shm/")};
    name.erase(std::find_if(name.begin(), name.end(), [](char c) { return c == '\n' || c == ' '; }),
               name.end());
    if (std::find(out.begin(), out.end(), name) == out.end())
      out.push_back(std::move(name));
  }
  std::fclose(f);
  return out;
}

void note_own_ipc_files(const std::vector<std::string>& before,
                        const std::vector<std::string>& after) {
  auto& r = the_registry();
  std::lock_guard<std::mutex> lock{r.mu};
  bool added = false;
  for (const auto& name : after)
    if (std::find(before.begin(), before.end(), name) == before.end()
        && std::find(r.files.begin(), r.files.end(), name) == r.files.end()) {
      r.files.push_back(name);
      added = true;
    }
  if (added && r.observer)
    r.observer(r.files);
}

std::vector<std::string> own_ipc_files() {
  auto& r = the_registry();
  std::lock_guard<std::mutex> lock{r.mu};
  return r.files;
}

} // namespace ag
