// ag::error: the one exception type the public API throws. Its message names what was wrong
// (the op, the operands, the device) so that a user can act on it without a debugger.
#pragma once

#include <stdexcept>
#include <string>

namespace ag {

class error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace ag
