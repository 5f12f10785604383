// export_wait: how a reader's runner waits for an export it is about to read
// (graph/export_slot.hpp) to be written by another child. The export is normally sent in the same broadcast as the read,
// so it is a few microseconds away: the wait spins first, then sleeps in growing steps (up to a
// millisecond) until the slot is ready or gone, or the deadline passes.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

#include "graph/export_slot.hpp"

namespace ag {

struct export_wait_policy {
  std::chrono::nanoseconds spin{std::chrono::microseconds{50}};
  // The longest a read waits for its export (graph_option::wait_timeout; milliseconds::max():
  // no deadline): should the exporter's lane fail, the controller marks the slot gone first.
  std::chrono::milliseconds timeout{60000};
  // Called once when the spin ends with the export still pending, before the first sleep: a
  // batch runner publishes there what it ran, which the exporter's lane may be waiting for (an
  // await, graph/op.hpp). Empty: nothing.
  std::function<void()> before_sleep;
};

// The slot's state once it is no longer pending, or pending when the deadline passed.
export_state wait_for_export(const std::byte* slot, const export_wait_policy& policy);

} // namespace ag
