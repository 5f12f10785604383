// child_pulse: what the progress watchdog (actors/planner_watch.cpp) makes of one look at a child,
// which reads its broadcasts and runs each batch on one thread: while it is inside one long
// operator it reads nothing, and only the completion board shows that it is alive (written by the
// child on the shared-memory path, by the puller from the child's Pulses on the sockets). One per
// remote lane; it remembers the heartbeat it saw at the last look.
#pragma once

#include <cstdint>

namespace ag {

class child_pulse {
public:
  enum class sign {
    caught_up, // it has read every broadcast there for it: nothing to watch
    executing, // behind, but inside an operator (or a synchronize) and beating since the last look
    none,      // behind, and nothing here shows progress: the watchdog's clock runs
  };

  // A child that has read `read` of the `readable` broadcasts there for it, whose runner shows
  // `running` on the board (0: between operators) and whose main thread has beaten `beat` times.
  // A stopped child beats no more, so it is never executing for longer than one look.
  sign look(uint64_t read, uint64_t readable, uint64_t running, uint64_t beat) noexcept;

private:
  uint64_t beat_seen_ = 0;
};

} // namespace ag
