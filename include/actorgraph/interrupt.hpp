// Interrupting a wait: an application that handles Ctrl-C itself (the Python binding does) can cut
// its own thread's long waits on a runtime short. While an interrupt_scope lives on a thread, that
// thread's waits (sync(), to_vector() and values(), an operator waiting for room) call the scope's
// check at least every interrupt_period; when it returns true, the wait throws ag::interrupted. The
// work it waited for goes on, and can be waited for again: the runtime stays usable.
//
// On the sockets path (graph_option::transport = sockets, and every runtime with nodes) a wait is
// a request to the executor actor, whose reply the thread receives in slices of interrupt_period.
#pragma once

#include <chrono>

#include "actorgraph/error.hpp"

namespace ag {

class interrupted : public error {
public:
  using error::error;
};

inline constexpr std::chrono::milliseconds interrupt_period{50};

class interrupt_scope {
public:
  // check(context) is called on this thread, from inside its waits.
  interrupt_scope(bool (*check)(void*), void* context) noexcept;
  // Restores the scope this one was made in (scopes nest).
  ~interrupt_scope();
  interrupt_scope(const interrupt_scope&) = delete;
  interrupt_scope& operator=(const interrupt_scope&) = delete;

private:
  bool (*check_)(void*);
  void* context_;
  const interrupt_scope* outer_;
  friend struct interrupt_access;
};

} // namespace ag
