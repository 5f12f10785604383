// runtime_dir: the per-runtime directory (mode 0700, from mkdtemp) that holds every ipc://
// endpoint of one runtime, so that no other user can connect to them. Removed, with what is in
// it, when the runtime ends.
#pragma once

#include <string>
#include <type_traits>

namespace ag {

class runtime_dir {
public:
  // Creates $TMPDIR/ag-<pid>-XXXXXX (or under /tmp). Throws ag::error naming the path on failure.
  static runtime_dir create();

  runtime_dir() noexcept = default;
  runtime_dir(runtime_dir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  runtime_dir& operator=(runtime_dir&& other) noexcept;
  ~runtime_dir();

  const std::string& path() const noexcept { return path_; }

  // "ipc://<path>/<name>".
  std::string endpoint(const std::string& name) const { return "ipc://" + path_ + "/" + name; }

private:
  explicit runtime_dir(std::string path) noexcept : path_(std::move(path)) {}

  std::string path_;
};

static_assert(std::is_nothrow_move_constructible_v<runtime_dir>);

} // namespace ag
