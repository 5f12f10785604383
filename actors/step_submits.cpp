#include "actors/step_submits.hpp"

#include <utility>

#include <caf/send.hpp>

namespace ag {

void step_submits::submit(op_request&& req) {
  if (!stepping_.load(std::memory_order_acquire))
    return caf::anon_send(executor_, submit_atom::value, std::move(req));
  std::lock_guard<std::mutex> lock{mtx_};
  run_.push_back({std::move(req), 0});
  if (run_.size() >= max_gathered)
    send(false);
}

void step_submits::submit(collective_request&& req) {
  std::lock_guard<std::mutex> lock{mtx_};
  if (!run_.empty())
    send(false);
  caf::anon_send(executor_, submit_atom::value, std::move(req));
}

void step_submits::release(operand_id id) noexcept {
  if (stepping_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock{mtx_};
    try {
      run_.push_back({{}, id});
      if (run_.size() >= max_gathered)
        send(false);
      return;
    } catch (...) { // no room to gather it: what was gathered goes first, then it alone
      send(false);
      caf::anon_send(executor_, release_atom::value, id);
      return;
    }
  }
  caf::anon_send(executor_, release_atom::value, id);
}

void step_submits::mark() {
  std::lock_guard<std::mutex> lock{mtx_};
  stepping_.store(true, std::memory_order_release);
  send(true);
}

void step_submits::flush() noexcept {
  if (!stepping_.load(std::memory_order_acquire))
    return;
  std::lock_guard<std::mutex> lock{mtx_};
  if (!run_.empty())
    send(false);
}

void step_submits::send(bool mark) {
  std::vector<submission> run;
  run.swap(run_);
  try {
    run_.reserve(run.size()); // the next step is likely as long
  } catch (...) {
  }
  caf::anon_send(executor_, submit_atom::value, std::move(run), mark);
}

} // namespace ag
