#include "actorgraph/node.hpp"

#include "actorgraph/error.hpp"
#include "graph/printable.hpp"

namespace ag {

std::vector<node> parse_nodes(const std::string& text) {
  std::vector<node> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto comma = text.find(',', at);
    const std::string item =
      text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const auto first = item.find('=');
    const auto last = item.rfind('=');
    if (first == std::string::npos || first == last || first == 0 || last + 1 == item.size())
      throw error("nodes: \"" + printable(item) + "\" is not NAME=tcp://HOST:PORT=PUBLIC_FILE");
    out.push_back({item.substr(0, first), item.substr(first + 1, last - first - 1),
                   item.substr(last + 1)});
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return out;
}

} // namespace ag
