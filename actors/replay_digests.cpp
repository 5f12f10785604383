// The digests of a replay's operands as ag-replay prints them: a line an operand, and one for all.
#include "actors/replay.hpp"

#include <cstdio>

#include "ipc/trace.hpp"

namespace ag {

std::string format_digests(const std::vector<operand_digest>& digests) {
  std::string out;
  uint64_t all = trace::digest(nullptr, 0);
  char line[160];
  for (const auto& d : digests) {
    std::snprintf(line, sizeof line, "%-28s %12llu bytes  %016llx\n", d.what.c_str(),
                  static_cast<unsigned long long>(d.bytes),
                  static_cast<unsigned long long>(d.digest));
    out += line;
    const uint64_t both[2] = {all, d.digest};
    all = trace::digest(both, sizeof both);
  }
  std::snprintf(line, sizeof line, "%-28s %12zu items  %016llx\n", "all", digests.size(),
                static_cast<unsigned long long>(all));
  return out + line;
}

} // namespace ag
