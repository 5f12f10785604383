// cuda_ipc: one CUDA stream's side of the direct transfers between child processes (CUDA IPC).
// As an exporter it hands out memory handles of the allocations that hold its operands, and
// records its one interprocess event after what it enqueued so far; as a reader it maps the other
// children's allocations and opens their events, once each, and keeps them per lane until that
// lane's child is gone (forget) or the stream ends (close_all). Only the CUDA backend includes it.
//
// One event per exporting stream serves every export: a reader waits for the event as it was last
// recorded when the wait is enqueued, which is never earlier than the export it read (the slot is
// written after the record), and a later record only adds work that was enqueued before it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <cuda_runtime_api.h>

#include "actorgraph/device.hpp"

namespace ag {

class cuda_ipc {
public:
  explicit cuda_ipc(ag::device dev) : dev_(dev) {}
  ~cuda_ipc() { close_all(); }
  cuda_ipc(const cuda_ipc&) = delete;
  cuda_ipc& operator=(const cuda_ipc&) = delete;

  // The handle of the allocation that holds ptr, ptr's offset in it, and the handle of this
  // stream's event, recorded on `stream` now.
  uint64_t export_memory(const void* ptr, cudaStream_t stream, char (&handle)[64],
                         char (&event)[64]);
  const void* import_memory(const char (&handle)[64], uint32_t lane);
  void wait_export(const char (&event)[64], uint32_t lane, cudaStream_t stream);
  // Closes every mapping and event of lane `lane`; the caller synchronized the streams that used
  // them.
  void forget(uint32_t lane) noexcept;
  bool holds(uint32_t lane) const noexcept;
  void close_all() noexcept;

private:
  struct mapping {
    void* ptr;
    uint32_t lane;
  };
  struct opened_event {
    cudaEvent_t event;
    uint32_t lane;
  };
  ag::device dev_;
  cudaEvent_t own_ = nullptr; // this stream's interprocess event, made on the first export
  char own_handle_[64] = {};
  std::map<std::string, mapping> mappings_;     // handle bytes -> mapping
  std::map<std::string, opened_event> events_;  // handle bytes -> event
};

} // namespace ag
