// What a controller must not leave behind if a stop signal ends it: its children and the files of
// its runtimes (shared-memory objects, socket files, runtime directories). Entries are kept in a
// fixed table that a signal handler can walk without allocating or locking.
#pragma once

#include <string>

#include <sys/types.h>

namespace ag::cleanup {

// Registers a file to unlink (is_dir: a directory to remove once empty; neither follows a
// symlink); returns a slot for forget(), or -1 when the table is full (the entry is then left to
// the next runtime's clean-up of dead runtimes, ipc/leftovers.hpp).
int remember_path(const std::string& path, bool is_dir) noexcept;
// Registers a child to SIGKILL; returns a slot for forget_pid(), or -1 when the table is full.
int remember_pid(pid_t pid) noexcept;

void forget_path(int slot) noexcept;
void forget_pid(int slot) noexcept;

// Kills every child this process registered, unlinks every file it registered, then removes its
// directories (not those of the process it was forked from). Async-signal-safe.
void run() noexcept;

} // namespace ag::cleanup
