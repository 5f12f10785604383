// cpu_budget: how many CPUs this process may use, so that a wait spins only where a core is free
// for the thread it waits for (ipc/spin_census.hpp). Its affinity mask counts, and fewer where a
// cgroup's CPU quota allows less (a container limited to two CPUs sees 2 however many the host
// has): cgroup v2's cpu.max, or v1's cpu.cfs_quota_us over cpu.cfs_period_us, the smallest along
// the path from the process's group to the root. The parsers are separate so that tests feed them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ag {

// The CPUs this process may use now: at least 1.
unsigned usable_cpus();

namespace cpu_budget {

// The CPUs of a cgroup v2 cpu.max ("200000 100000": 2; "max 100000": no limit, nullopt).
std::optional<double> parse_cpu_max(std::string_view text);
// The CPUs of a cgroup v1 quota and period (a quota of -1: no limit, nullopt).
std::optional<double> quota_cpus(long long quota_us, long long period_us);
// The group of /proc/self/cgroup's text: the v2 line's ("0::/a/b") when `controller` is empty,
// else the v1 line that lists `controller` ("4:cpu,cpuacct:/a/b"); nullopt when there is none.
std::optional<std::string> group_of(std::string_view proc_cgroup, std::string_view controller);
// What usable_cpus() makes of an affinity count and a quota: the smaller, rounded up, at least 1.
unsigned combine(unsigned affinity, std::optional<double> quota);

} // namespace cpu_budget

} // namespace ag
