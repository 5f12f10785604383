// How a user's thread asks the executor and receives its reply (the sockets path's waits: sync,
// reads, stats): the request's deadline, the handlers of a reply, and the receive itself.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <caf/blocking_actor.hpp>
#include <caf/scoped_actor.hpp>

#include "actorgraph/interrupt.hpp"
#include "graph/deadline.hpp"
#include "graph/interrupts.hpp"

namespace ag {

// The deadline of a request to the executor, which answers by `wait` (plus a grace): none when
// `wait` is none.
inline caf::duration request_timeout(std::chrono::milliseconds wait) {
  if (no_deadline(wait))
    return caf::infinite;
  return caf::duration{saturating_add(wait, std::chrono::seconds{5})};
}

// A receive handler that keeps a reply of several values.
template <class... Us>
auto keep_reply(std::optional<std::tuple<Us...>>& out) {
  return [&out](Us&... xs) { out.emplace(std::move(xs)...); };
}

template <class T>
struct is_tuple : std::false_type {};
template <class... Us>
struct is_tuple<std::tuple<Us...>> : std::true_type {};

// Receives the reply to `handle`: at once, or, when the thread may be interrupted
// (ag::interrupt_scope: Ctrl-C in Python), in slices of interrupt_period with a look at the
// interrupt between them, so that the wait ends with ag::interrupted; the reply, should it come
// later, goes with the scoped actor.
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
