// How a user's thread receives the executor's reply to a request (the sockets path's waits: sync,
// reads, stats): at once, or, when the thread may be interrupted (ag::interrupt_scope: Ctrl-C in
// Python), in slices of interrupt_period with a look at the interrupt between them, so that the
// wait ends with ag::interrupted; the reply, should it come later, goes with the scoped actor.
#pragma once

#include <string>
#include <utility>

#include <caf/blocking_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actorgraph/interrupt.hpp"
#include "graph/interrupts.hpp"

namespace ag {

template <class Handle, class OnValue, class OnError>
void receive_reply(caf::scoped_actor& self, Handle& handle, OnValue on_value, OnError on_error,
                   const std::string& what) {
  if (!detail::interruptible()) {
    handle.receive(std::move(on_value), std::move(on_error));
    return;
  }
  for (;;) {
    bool sliced = false;
    caf::blocking_actor::accept_one_cond once;
    self->varargs_receive(once, handle.id(), on_value, on_error,
                          caf::after(interrupt_period) >> [&] { sliced = true; });
    if (!sliced)
      return;
    detail::check_interrupt(what);
  }
}

} // namespace ag
