// The project's error codes: what kind of failure a wait is answered with. Free of CAF so that the
// planner (actors/planner.hpp) can name them; actors/protocol.hpp turns them into caf::error.
#pragma once

#include <cstdint>

namespace ag {

enum class errc : uint8_t {
  device_failed = 1, // an operator could not run: its device failed or stopped, or the store was full
  bad_request,       // an operator named an operand the executor does not know
  timeout,           // a wait passed its deadline (the message names who is silent)
  runner_exited,     // a child exited with code 0: on Destroy at shutdown, or unasked before
};

} // namespace ag
