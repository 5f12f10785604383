// Removes what runtimes that died without shutting down left behind: their shared-memory objects
// (/dev/shm/ag-<pid>-<tag>-...) and runtime directories ($TMPDIR/ag-<pid>-XXXXXX). A runtime's
// names carry its pid; only names of this user whose pid no longer runs are removed, so a live
// runtime's are never touched.
#pragma once

#include <cstddef>
#include <string>

namespace ag {

struct leftovers_removed {
  std::size_t shm_objects = 0;
  std::size_t directories = 0;
};

// Scans /dev/shm and tmp_dir; never throws.
leftovers_removed remove_leftovers(const std::string& tmp_dir) noexcept;

// The pid in an actorgraph name "ag-<pid>-...", or 0 when `name` is not one.
long owner_pid(const std::string& name) noexcept;

// The directory runtimes put their endpoints under: $TMPDIR, else /tmp.
std::string tmp_dir();

} // namespace ag
