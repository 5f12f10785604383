// fork_guard: a runtime belongs to the process that made it. A process forked from that one has
// none of its threads (the actor system, the executor, the waits) and shares its children, store
// and files, so a runtime used there would hang or disturb its parent: every use throws instead,
// and the forked copy is never torn down (that would stop the parent's children and unlink its
// files).
#pragma once

#include <cstdint>
#include <string>

#include <sys/types.h>

namespace ag {

class fork_guard {
public:
  // Records the process this runs in.
  fork_guard() noexcept;

  // True in a process forked from the one that made this guard. One atomic load: a fork is noticed
  // through a pthread_atfork handler, not by asking the kernel for the pid every time.
  bool forked() const noexcept;

  // Throws ag::error naming `what` and both processes; called when forked(), so that a caller on
  // the per-operator path builds its words only then.
  [[noreturn]] void refuse(const std::string& what) const;

private:
  uint64_t generation_;
  pid_t pid_;
};

} // namespace ag
