#include "apps/ag-bench/children.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

namespace ag::bench {

std::vector<pid_t> children_of_this_process() {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator{"/proc", ec}) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream in{e.path() / "stat"};
    std::string stat;
    std::getline(in, stat);
    const auto close = stat.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest{stat.substr(close + 2)};
    char state = 0;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == ::getpid())
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

} // namespace ag::bench
