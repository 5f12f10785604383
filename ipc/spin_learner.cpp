#include "ipc/spin_learner.hpp"

#include <algorithm>

namespace ag {

std::chrono::nanoseconds spin_learner::allowance(std::chrono::nanoseconds bound) noexcept {
  const int64_t allow = std::min(now_or(bound), bound.count());
  if (allow >= least.count())
    return std::chrono::nanoseconds{allow};
  if (++skipped_ % probe_every == 0)
    return bound; // a probe: are waits short again?
  return std::chrono::nanoseconds{0};
}

void spin_learner::caught(std::chrono::nanoseconds waited) noexcept {
  if (allow_ns_ >= 0) // at least `least`: a probe that caught its wait keeps the waiter spinning
    allow_ns_ = std::max({allow_ns_, 2 * waited.count(), least.count()});
}

void spin_learner::slept(std::chrono::nanoseconds waited, std::chrono::nanoseconds bound) noexcept {
  const int64_t now = now_or(bound);
  if (waited <= bound)
    allow_ns_ = std::min(bound.count(), std::max({2 * now, waited.count() + waited.count() / 4,
                                                  least.count()}));
  else
    allow_ns_ = now / 2;
}

void spin_learner::missed(std::chrono::nanoseconds bound) noexcept { allow_ns_ = now_or(bound) / 2; }

} // namespace ag
