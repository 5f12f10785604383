#include "actors/child_pulse.hpp"

namespace ag {

child_pulse::sign child_pulse::look(uint64_t read, uint64_t readable, uint64_t running,
                                    uint64_t beat) noexcept {
  const bool beating = beat != beat_seen_;
  beat_seen_ = beat;
  if (read >= readable)
    return sign::caught_up;
  return running != 0 && beating ? sign::executing : sign::none;
}

} // namespace ag
