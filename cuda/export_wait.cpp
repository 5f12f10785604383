#include "cuda/export_wait.hpp"

#include <algorithm>
#include <thread>

#include "graph/deadline.hpp"

namespace ag {

export_state wait_for_export(const std::byte* slot, const export_wait_policy& policy) {
  using clock = std::chrono::steady_clock;
  auto state = export_slots::load(slot);
  if (state != export_state::pending)
    return state;
  const auto start = clock::now();
  const auto deadline = deadline_after(policy.timeout); // milliseconds::max(): none
  const auto spin_end = start + std::min<clock::duration>(policy.spin, deadline - start);
  for (uint32_t i = 1; clock::now() < spin_end; ++i) {
    if ((state = export_slots::load(slot)) != export_state::pending)
      return state;
    if ((i & 63) == 0) // the exporter may need this core (a machine with few cores)
      std::this_thread::yield();
  }
  if (policy.before_sleep) {
    policy.before_sleep();
    if ((state = export_slots::load(slot)) != export_state::pending)
      return state;
  }
  constexpr auto longest = std::chrono::microseconds{1000};
  for (auto step = std::chrono::microseconds{10};; step = std::min(step * 2, longest)) {
    if ((state = export_slots::load(slot)) != export_state::pending)
      return state;
    const auto now = clock::now();
    if (now >= deadline)
      return export_state::pending;
    std::this_thread::sleep_for(std::min<clock::duration>(step, deadline - now));
  }
}

} // namespace ag
