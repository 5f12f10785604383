// board_waits: how a user's thread answers sync() and to_vector() itself on the shared-memory path
// (docs/PROTOCOL.md, section 9), without actors: it takes the ticket the executor leaves in a
// slot (waiting a short while: the executor answers at once unless it is busy), then watches the
// completion board until the ticket's target is reached, a failure or the runtime's end makes the
// ticket stale (the caller then asks the executor, which answers the error), or the deadline
// passes (an ag::error naming the device that did not acknowledge). The runtime sends the ticket
// request; tests fill the slot themselves.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actors/ticket_slot.hpp"
#include "ipc/completion_board.hpp"

namespace ag {

class board_waits {
public:
  // How long a ticket may take before the caller asks the executor the ordinary way (a thread in
  // an interrupt_scope waits for it as long as for the board: actorgraph/interrupt.hpp).
  static constexpr std::chrono::milliseconds patience{10};

  // lanes: the name of each lane ("cpu", "sim:0", ...), for the errors at the deadline.
  board_waits(completion_board& board, std::vector<std::string> lanes,
              std::chrono::milliseconds wait_timeout, spin_policy spin);

  // The store offset of a read once its writer ran; nullopt when the executor must answer.
  // what: the wait, for the error ("to_vector of tensor #5").
  std::optional<uint64_t> read(ticket_slot& slot, const std::string& what) const;
  // True once every entry the ticket names was acknowledged; false when the executor must answer.
  bool sync(ticket_slot& slot) const;

private:
  // The executor's ticket: within patience, or (a thread in an interrupt_scope) by the deadline.
  bool take(ticket_slot& slot, const std::string& what) const;

  completion_board& board_;
  std::vector<std::string> lanes_;
  std::chrono::milliseconds wait_timeout_;
  spin_policy spin_;
};

} // namespace ag
