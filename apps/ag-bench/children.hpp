// This process's children (a runtime's ag-runner processes), whichever of its threads started
// them: /proc/PID/stat's parent field (a thread's /proc/self/task/TID/children lists only the
// children that thread started).
#pragma once

#include <vector>

#include <sys/types.h>

namespace ag::bench {

std::vector<pid_t> children_of_this_process();

} // namespace ag::bench
