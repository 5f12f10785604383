// memory_file: a file that lives in memory alone (memfd), reached by a path of this process,
// "/proc/self/fd/N", for a library that wants a path (the middleman's TLS trust file): nothing of
// it is ever on disk, and it is gone with its descriptor, whatever ends the process.
#pragma once

#include <string>
#include <type_traits>

namespace ag {

class memory_file {
public:
  // An empty file named `label` (in /proc/self/fd listings); close-on-exec. Throws ag::error
  // naming it when it cannot be made.
  static memory_file create(const std::string& label);

  memory_file() noexcept = default;
  memory_file(memory_file&& other) noexcept;
  memory_file& operator=(memory_file&& other) noexcept;
  ~memory_file();

  int fd() const noexcept { return fd_; }
  // "/proc/self/fd/N": opened again (for writing with truncation, or reading) it is this file.
  const std::string& path() const noexcept { return path_; }

private:
  int fd_ = -1;
  std::string path_;
};

static_assert(std::is_nothrow_move_constructible_v<memory_file>);

} // namespace ag
