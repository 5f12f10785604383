// The loop of a detached actor that blocks in a poll (the puller and the subscriber, each over its
// ZMQ socket): each poll_atom runs one round, then the actor sends itself the next poll_atom, so
// that it looks at its mailbox (an exit request) between rounds.
#pragma once

#include <utility>

#include <caf/behavior.hpp>

#include "actors/protocol.hpp"

namespace ag {

// Starts the loop and returns its behaviour. `round` (a callable without arguments) must return
// within a bounded time, as zmqs::drain does, or the actor stops answering its mailbox.
template <class Self, class Round>
caf::behavior poll_loop(Self* self, Round round) {
  self->send(self, poll_atom::value);
  return {
    [=](poll_atom) {
      round();
      self->send(self, poll_atom::value);
    },
  };
}

} // namespace ag
