// descriptors: how many file descriptors this process has open and may open (RLIMIT_NOFILE), so
// that a runtime is refused with ag::error before it starts when it could not get the ones it
// needs. Past the limit libzmq aborts the whole process (an assertion in its I/O thread when an
// accept() finds none left), which nothing can catch and which leaves every file behind.
#pragma once

#include <cstddef>
#include <string>

namespace ag {

struct descriptor_use {
  std::size_t open = 0;  // now, this process's (/proc/self/fd)
  std::size_t limit = 0; // RLIMIT_NOFILE's soft limit (ulimit -n)
};

descriptor_use descriptors_now();

// Throws ag::error naming `what`, the need, the open count and the limit (and what to change)
// unless `need` more descriptors fit under the limit.
void check_descriptors(std::size_t need, const std::string& what);

// The words for a call that failed with EMFILE or ENFILE (errno `err`): the limit and the open
// count, and what to change; empty for any other errno.
std::string descriptor_note(int err);

// "WHO: cannot open its socket ENDPOINT: WHAT" for a socket call that failed with errno `err`, with
// descriptor_note's words when it ran out of descriptors.
std::string socket_failure(const std::string& who, const std::string& endpoint,
                           const std::string& what, int err);

} // namespace ag
