// step_submits: how the user's threads send operators and releases to the executor. Once the
// runtime marks steps (runtime::mark_step), what they submit between two marks is gathered, in
// the order it was made, and sent as one message at the mark (or every max_gathered), instead of
// a message each: the executor then places a step's operators in one go. Anything else a thread
// sends the executor goes after what was gathered before it (flush() first). Without marks, each
// operator and release goes at once, as before. Any thread may call any member.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include <caf/typed_actor.hpp>

#include "actors/protocol.hpp"

namespace ag {

class step_submits {
public:
  static constexpr std::size_t max_gathered = 256;

  void attach(executor_actor executor) { executor_ = std::move(executor); }

  void submit(op_request&& req);
  void submit(collective_request&& req);
  void release(operand_id id) noexcept;
  // Ends a step: sends what was gathered with the mark; gathers from now on.
  void mark();
  // Sends what was gathered (before another message to the executor).
  void flush() noexcept;

private:
  void send(bool mark); // under mtx_

  executor_actor executor_;
  std::atomic<bool> stepping_{false};
  std::mutex mtx_;
  std::vector<submission> run_;
};

} // namespace ag
