// runtime_dir: the per-runtime directory (mode 0700) that holds every ipc:// endpoint of one
// runtime, so that no other user can connect to them, and the owner marker that lets a later
// runtime tell what a dead runtime left from anything else (ipc/leftovers.hpp). Removed, with what
// is in it, when the runtime ends.
#pragma once

#include <string>
#include <type_traits>

namespace ag {

// A fresh name for one runtime's objects, "ag-<pid>-actorgraph-<tag>" (<tag>: 16 lowercase hex
// digits from std::random_device), the pattern of its directory's name.
std::string runtime_name();

class runtime_dir {
public:
  // Creates $TMPDIR/ag-<pid>-actorgraph-<tag> (or under /tmp; <tag>: 16 lowercase hex digits from
  // std::random_device) with mode 0700 and writes the owner marker "owner" in it: magic line,
  // pid, process start time, boot id. Throws ag::error naming the path on failure.
  static runtime_dir create();

  runtime_dir() noexcept = default;
  runtime_dir(runtime_dir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  runtime_dir& operator=(runtime_dir&& other) noexcept;
  ~runtime_dir();

  const std::string& path() const noexcept { return path_; }

  // The directory's own name, "ag-<pid>-actorgraph-<tag>". The runtime's shared-memory objects
  // are named after it (<name>-store, <name>-sync-<lane>), which ties them to the marker.
  std::string name() const { return path_.substr(path_.rfind('/') + 1); }

  // The owner marker's path.
  std::string marker_path() const;

  // "ipc://<path>/<name>".
  std::string endpoint(const std::string& name) const { return "ipc://" + path_ + "/" + name; }

private:
  explicit runtime_dir(std::string path) noexcept : path_(std::move(path)) {}

  std::string path_;
};

static_assert(std::is_nothrow_move_constructible_v<runtime_dir>);

} // namespace ag
