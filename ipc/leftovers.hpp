// Removes what runtimes that died without shutting down left behind: their runtime directories
// ($TMPDIR/ag-<pid>-actorgraph-<tag>) and the shared-memory objects named after them
// (/dev/shm/ag-<pid>-actorgraph-<tag>-store, ...-channel, ...-sync-<lane>). A name alone proves nothing: a
// directory is only ours when it holds an owner marker (magic line, pid, process start time, boot
// id) that this user wrote, and it is only removed once that process is provably gone.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ag {

// The marker every runtime directory holds, naming the process that made it.
inline constexpr const char* owner_marker_file = "owner";
inline constexpr const char* owner_marker_magic = "actorgraph runtime directory v1";

// Who a process is: its pid, its start time (clock ticks after boot, field 22 of
// /proc/<pid>/stat) and the boot it runs in (/proc/sys/kernel/random/boot_id). A pid that is
// reused, or survives in a file across a reboot, names a different identity.
struct process_identity {
  long pid = 0;
  unsigned long long start_time = 0;
  std::string boot_id;
};

// The identity of `pid` as it runs now; nullopt when it does not run (no such process, or a
// zombie) or /proc cannot tell.
std::optional<process_identity> identity_of(long pid);

// The marker's text for `owner`, and back. parse_owner_marker accepts exactly what
// owner_marker_text writes, else nullopt.
std::string owner_marker_text(const process_identity& owner);
std::optional<process_identity> parse_owner_marker(const std::string& text);

// True only when the process a marker names has provably ended: its pid does not run, or runs
// with another start time (reused), or the marker was written in another boot. Anything /proc
// cannot settle counts as alive.
bool owner_gone(const process_identity& recorded);

// "ag-<pid>-actorgraph-<16 lowercase hex>" -> pid; 0 for any other name.
long runtime_dir_owner(const std::string& name) noexcept;

struct leftovers_removed {
  std::size_t shm_objects = 0;
  std::size_t directories = 0;
};

// Removes, for every directory in tmp_dir that is a dead runtime's (the name's shape, a real
// directory of this user with no access for others, a regular marker file of this user that
// parses and names the pid in the name, and an owner that is gone): the regular shared-memory
// objects of this user named <dir's name>-store, -channel and -sync-<lane>, then the files in
// the directory, the marker, the directory. Symlinks are never followed; a directory holding a
// subdirectory is left whole. Never throws.
leftovers_removed remove_leftovers(const std::string& tmp_dir) noexcept;

// What the CUDA driver leaves in /dev/shm for a process that made interprocess events or memory
// handles and was killed before it destroyed them: cuda.shm.<uid>.<pid>.<n>, the numbers in
// lowercase hex, this user's regular files only. Removes those of `pid` (a child the caller
// reaped, killed by a signal) and nothing else; returns how many. Never throws.
std::size_t remove_cuda_ipc_files(long pid) noexcept;

// The same for files a child named itself (sub_process_sync::record_driver_files): where the
// driver's pid is not the one the proxy sees (another pid namespace), the name is what ties a
// file to the child. Removes each name that has the driver's shape, cuda.shm.<this uid>.<hex>.<hex>,
// and is a regular file of this user in /dev/shm (never a link, never another path); returns how
// many. Never throws.
std::size_t remove_cuda_ipc_files(const std::vector<std::string>& names) noexcept;

// The directory runtimes put their endpoints under: $TMPDIR, else /tmp.
std::string tmp_dir();

} // namespace ag
