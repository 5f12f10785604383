// Text a user wrote, as an error message may echo it: control characters and backslashes escaped
// (ESC as \x1b, a backslash as \\), so that a message never carries raw terminal controls or
// line breaks.
#pragma once

#include <string>

namespace ag {

std::string printable(const std::string& text);

} // namespace ag
