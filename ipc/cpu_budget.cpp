#include "ipc/cpu_budget.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <sched.h>

namespace ag {

namespace cpu_budget {

std::optional<double> parse_cpu_max(std::string_view text) {
  std::istringstream in{std::string{text}};
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max")
    return std::nullopt;
  try {
    return quota_cpus(std::stoll(quota), period);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<double> quota_cpus(long long quota_us, long long period_us) {
  if (quota_us <= 0 || period_us <= 0)
    return std::nullopt;
  return double(quota_us) / double(period_us);
}

std::optional<std::string> group_of(std::string_view proc_cgroup, std::string_view controller) {
  std::istringstream in{std::string{proc_cgroup}};
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos)
      continue;
    const std::string_view list{line.data() + first + 1, second - first - 1};
    const std::string path = line.substr(second + 1);
    if (controller.empty()) {
      if (line.compare(0, first, "0") == 0 && list.empty())
        return path;
      continue;
    }
    for (std::size_t at = 0; at <= list.size();) {
      const auto end = std::min(list.find(',', at), list.size());
      if (list.substr(at, end - at) == controller)
        return path;
      at = end + 1;
    }
  }
  return std::nullopt;
}

unsigned combine(unsigned affinity, std::optional<double> quota) {
  unsigned n = std::max(affinity, 1u);
  if (quota && *quota > 0)
    n = std::min(n, static_cast<unsigned>(std::ceil(*quota - 1e-9)));
  return std::max(n, 1u);
}

} // namespace cpu_budget

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in{path};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> smaller(std::optional<double> a, std::optional<double> b) {
  if (!a)
    return b;
  if (!b)
    return a;
  return std::min(*a, *b);
}

// The smallest quota from `group` up to the root of the hierarchy mounted at `root`.
template <class QuotaAt>
std::optional<double> along_path(std::string group, QuotaAt quota_at) {
  std::optional<double> q;
  for (;;) {
    q = smaller(q, quota_at(group == "/" ? std::string{} : group));
    if (group.empty() || group == "/")
      return q;
    const auto slash = group.find_last_of('/');
    group = slash == 0 || slash == std::string::npos ? "/" : group.substr(0, slash);
  }
}

std::optional<double> cgroup_quota() {
  const std::string self = read_all("/proc/self/cgroup");
  if (const auto v2 = cpu_budget::group_of(self, ""))
    if (auto q = along_path(*v2, [](const std::string& g) {
          return cpu_budget::parse_cpu_max(read_all("/sys/fs/cgroup" + g + "/cpu.max"));
        }))
      return q;
  if (const auto v1 = cpu_budget::group_of(self, "cpu")) {
    for (const char* root : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
      const std::string base = root;
      if (auto q = along_path(*v1, [&](const std::string& g) -> std::optional<double> {
            long long quota = 0, period = 0;
            std::ifstream qf{base + g + "/cpu.cfs_quota_us"}, pf{base + g + "/cpu.cfs_period_us"};
            if (!(qf >> quota) || !(pf >> period))
              return std::nullopt;
            return cpu_budget::quota_cpus(quota, period);
          }))
        return q;
    }
  }
  return std::nullopt;
}

} // namespace

unsigned usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  unsigned affinity = 0;
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    affinity = static_cast<unsigned>(CPU_COUNT(&set));
  return cpu_budget::combine(affinity, cgroup_quota());
}

} // namespace ag
