// lane_streams: the kernel streams of the lanes that run in the controller's process (thread mode),
// for the user's threads that share a device tensor's memory with another library
// (tensor::device_bytes). A share keeps its lane's stream, and with it the device memory that the
// stream's allocator holds, until the share goes, even past the runtime's end. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actorgraph/device.hpp"

namespace ag {

class kernel_stream;

class lane_streams {
public:
  explicit lane_streams(std::size_t lanes) : streams_(lanes) {}

  // Lane `lane`'s runner made its stream.
  void add(uint32_t lane, const std::shared_ptr<kernel_stream>& s);
  // Lane `lane`'s runner is going: its stream is found no more.
  void remove(uint32_t lane) noexcept;
  // The stream of lane `lane`, or null when it has none (any more).
  std::shared_ptr<kernel_stream> find(uint32_t lane) const;

  // The memory that `slot`, a written export of a lane of this process (graph/export_slot.hpp),
  // names, kept by that lane's stream; on a CUDA device `stream` (tensor::device_bytes) waits for
  // its writer. devices[l - 1] is lane l's. ag::error naming `what` when the slot is not a ready
  // export of `bytes` bytes, or its lane stopped.
  std::shared_ptr<void> share(const std::byte* slot, uint64_t bytes,
                              const std::vector<device>& devices, std::intptr_t stream,
                              const std::string& what) const;

private:
  mutable std::mutex mtx_;
  std::vector<std::weak_ptr<kernel_stream>> streams_;
};

} // namespace ag
