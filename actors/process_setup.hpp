// process_setup: where a controller's children are and how to start them (process mode): made by
// process_env, read by the lane topology that spawns the children's runner proxies.
#pragma once

#include <chrono>
#include <memory>
#include <string>

namespace zmq {
class context_t;
} // namespace zmq

namespace ag {

class shm_channel;

struct process_setup {
  std::shared_ptr<zmq::context_t> zmq;
  std::string pub_endpoint;
  std::string pull_endpoint;
  std::string store_name;
  std::string runner_path;
  std::string segment_prefix; // + "-sync-<lane>": each child's SubProcessSync segment
  std::string timeline_part_prefix; // + "<lane>": each child's timeline part (with a timeline)
  // The shared-memory path: the board and the ring every child maps (null: the sockets carry
  // the batches and the acknowledgements alone), and how long its waits spin before they sleep.
  std::shared_ptr<shm_channel> channel;
  std::chrono::nanoseconds spin{std::chrono::microseconds{50}};
};

} // namespace ag
