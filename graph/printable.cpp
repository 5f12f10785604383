#include "graph/printable.hpp"

namespace ag {

std::string printable(const std::string& text) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const unsigned char c : text) {
    if (c == '\\' || c < 0x20 || c == 0x7f) {
      out += c == '\\' ? std::string{"\\\\"} : std::string{"\\x"} + hex[c >> 4] + hex[c & 15];
      continue;
    }
    out += static_cast<char>(c);
  }
  return out;
}

} // namespace ag
