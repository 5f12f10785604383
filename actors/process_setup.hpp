// process_setup: where the children of a process-mode controller are and how to start them, as the
// process environment sets it up and the executor uses it (the seed's PerDeviceProcessNodeRunner).
#pragma once

#include <memory>
#include <string>

namespace zmq {
class context_t;
} // namespace zmq

namespace ag {

// Process mode: where the children are and how to start them.
struct process_setup {
  std::shared_ptr<zmq::context_t> zmq;
  std::string pub_endpoint;
  std::string pull_endpoint;
  std::string store_name;
  std::string runner_path;
  std::string segment_prefix; // + "-sync-<lane>": each child's SubProcessSync segment
  std::string timeline_part_prefix; // + "<lane>": each child's timeline part (with a timeline)
};

} // namespace ag
