#include "actors/lane_streams.hpp"

#include "actorgraph/error.hpp"
#include "cuda/kernel_stream.hpp"
#include "graph/export_slot.hpp"

namespace ag {

std::shared_ptr<void> lane_streams::share(const std::byte* slot, uint64_t bytes,
                                          const std::vector<device>& devices,
                                          std::intptr_t stream, const std::string& what) const {
  const export_slot x = export_slots::read(slot);
  if (static_cast<export_state>(x.state) != export_state::ready || x.bytes != bytes
      || x.lane == 0 || x.lane > devices.size())
    throw error(what + ": its export holds state " + std::to_string(x.state) + ", "
                + std::to_string(x.bytes) + " bytes, lane " + std::to_string(x.lane));
  const device& dev = devices[x.lane - 1];
  auto keep = find(x.lane);
  if (!keep)
    throw error(what + ": " + dev.str() + " has stopped");
  if (stream != -1 && dev.type == device::kind::cuda)
    cuda_stream_wait(stream, x.event);
  return {std::move(keep), reinterpret_cast<void*>(static_cast<uintptr_t>(x.offset))};
}

void lane_streams::add(uint32_t lane, const std::shared_ptr<kernel_stream>& s) {
  std::lock_guard<std::mutex> lock{mtx_};
  if (lane < streams_.size())
    streams_[lane] = s;
}

void lane_streams::remove(uint32_t lane) noexcept {
  std::lock_guard<std::mutex> lock{mtx_};
  if (lane < streams_.size())
    streams_[lane].reset();
}

std::shared_ptr<kernel_stream> lane_streams::find(uint32_t lane) const {
  std::lock_guard<std::mutex> lock{mtx_};
  return lane < streams_.size() ? streams_[lane].lock() : nullptr;
}

} // namespace ag
