// How a user's thread asks the executor and receives its reply (the sockets path's waits: sync,
// reads, stats): the request's deadline, the handlers of a reply, and the receive itself. The
// request goes without a timeout of CAF's own, and the deadline is kept by the receive, on the
// blocking actor's own mailbox wait: a request timeout is a timer of CAF's clock thread, set and
// then cancelled, two wake-ups of that thread on the path of every wait.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <caf/blocking_actor.hpp>
#include <caf/error.hpp>
#include <caf/sec.hpp>
#include <caf/scoped_actor.hpp>

#include "actorgraph/interrupt.hpp"
#include "actors/asker_pool.hpp"
#include "graph/deadline.hpp"
#include "graph/interrupts.hpp"

namespace ag {

// The deadline of a request to the executor, which answers by `wait` (plus a grace): none when
// `wait` is none.
inline std::chrono::milliseconds request_timeout(std::chrono::milliseconds wait) {
  return saturating_add(wait, std::chrono::seconds{5});
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

// Receives the reply to `handle` by `timeout` (none: milliseconds::max()); past it, on_error gets
// sec::request_timeout. A thread that may be interrupted (ag::interrupt_scope: Ctrl-C in Python)
// waits in slices of interrupt_period with a look at the interrupt between them, so that the wait
// ends with ag::interrupted; the reply, should it come later, goes with the scoped actor.
template <class Handle, class OnValue, class OnError>
void receive_reply(caf::scoped_actor& self, Handle& handle, OnValue on_value, OnError on_error,
                   const std::string& what, std::chrono::milliseconds timeout) {
  const auto deadline = deadline_after(timeout);
  const bool interruptible = detail::interruptible();
  if (!interruptible && deadline == steady_clock::time_point::max()) {
    handle.receive(std::move(on_value), std::move(on_error));
    return;
  }
  for (;;) {
    bool sliced = false;
    caf::blocking_actor::accept_one_cond once;
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      (interruptible ? detail::slice_end(deadline) : deadline) - steady_clock::now());
    self->varargs_receive(once, handle.id(), on_value, on_error,
                          caf::after(std::max(left, std::chrono::microseconds{0}))
                            >> [&] { sliced = true; });
    if (!sliced)
      return;
    if (steady_clock::now() >= deadline) {
      caf::error late = caf::make_error(caf::sec::request_timeout);
      on_error(late);
      return;
    }
    detail::check_interrupt(what);
  }
}

// Asks `dest` through an asker of `pool` and receives its reply by `timeout`: the reply, or
// nullopt with `err` set. T: caf::unit_t for an empty reply, std::tuple<...> for several values.
template <class T, class Dest, class... Ts>
std::optional<T> ask_through(asker_pool& pool, const Dest& dest, const std::string& what,
                             std::chrono::milliseconds timeout, caf::error& err, Ts&&... xs) {
  std::optional<T> result;
  bool answered = false; // the reply came: nothing more is on its way to this asker
  auto asker = pool.take();
  auto& self = *asker;
  auto on_error = [&](caf::error& e) {
    answered = e != caf::sec::request_timeout; // past the deadline: the reply may still come
    err = std::move(e);
  };
  auto handle = self->request(dest, caf::infinite, std::forward<Ts>(xs)...);
  if constexpr (std::is_same_v<T, caf::unit_t>) // CAF answers unit with an empty message
    receive_reply(self, handle, [&] { result = caf::unit; }, on_error, what, timeout);
  else if constexpr (is_tuple<T>::value)
    receive_reply(self, handle, keep_reply(result), on_error, what, timeout);
  else
    receive_reply(self, handle, [&](T& x) { result = std::move(x); }, on_error, what, timeout);
  if (answered || result)
    pool.give_back(std::move(asker));
  return result;
}

} // namespace ag
