#include "graph/collective.hpp"

namespace ag {

std::string to_string(collective_kind k) {
  switch (k) {
    case collective_kind::all_reduce: return "all_reduce";
    case collective_kind::broadcast: return "broadcast";
    case collective_kind::all_gather: return "all_gather";
    case collective_kind::reduce_scatter: return "reduce_scatter";
  }
  return "collective#" + std::to_string(static_cast<unsigned>(k));
}

uint64_t collective_request::out_count() const noexcept {
  switch (kind) {
    case collective_kind::all_gather: return count * parts.size();
    case collective_kind::reduce_scatter: return parts.empty() ? 0 : count / parts.size();
    default: return count;
  }
}

std::string describe(const collective_request& c) {
  std::string s = to_string(c.kind) + " of ";
  for (std::size_t i = 0; i < c.parts.size(); ++i)
    s += (i ? ",#" : "#") + std::to_string(c.parts[i]);
  s += " (" + std::to_string(c.parts.size()) + " x " + std::to_string(c.count) + " elements";
  if (c.kind == collective_kind::broadcast)
    s += " to " + std::to_string(c.to.size()) + " devices";
  return s + ")";
}

} // namespace ag
