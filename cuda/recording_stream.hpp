// recording_stream: a kernel stream in front of another that, while it records, keeps each kernel
// call (fill, elementwise, rows, random, sum, matmul, copies) as a recorded_call instead of making
// it, so that a step's calls can be captured into a graph (kernel_stream::capture) or run later in
// order. Everything else (memory, exports, events, synchronize) goes to the stream behind at once.
// While it records, the stream behind holds what is freed (kernel_stream::hold_frees): a block
// freed during a recording may be handed out again, in stream order like on CUDA, but not given
// back to the host before the recorded calls that read it ran.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "cuda/kernel_stream.hpp"

namespace ag {

class recording_stream final : public kernel_stream {
public:
  explicit recording_stream(kernel_stream& inner) noexcept
    : inner_(inner) {}

  // From now on calls are kept in `into`, each with the operator index set by at(); null: made
  // at once again.
  void record(std::vector<recorded_call>* into) noexcept {
    into_ = into;
    if (into)
      inner_.hold_frees(true);
  }
  bool recording() const noexcept { return into_ != nullptr; }
  void at(std::size_t op) noexcept { op_ = op; }
  // What a recording freed may go back to the host, once its calls ran (or will no more).
  void release_deferred() noexcept { inner_.hold_frees(false); }

  ag::device device() const noexcept override { return inner_.device(); }
  void* allocate(std::size_t bytes) override { return inner_.allocate(bytes); }
  void deallocate(void* ptr, std::size_t bytes) noexcept override { inner_.deallocate(ptr, bytes); }
  void hold_frees(bool hold) noexcept override { inner_.hold_frees(hold); }
  void leave(void* ptr, std::size_t bytes) noexcept override { inner_.leave(ptr, bytes); }

  void fill(dtype t, void* out, std::size_t count, double value) override;
  void elementwise(const elementwise_call& call) override;
  void rows(const row_call& call) override;
  void random(random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first,
              float a, float b) override;
  void sum(const float* a, float* out, std::size_t count) override;
  void matmul(const matmul_call& call) override;
  void copy(void* dst, bool dst_on_host, const void* src, bool src_on_host,
            std::size_t bytes) override;
  void copy_peer(void* dst, const void* src, const ag::device& from, std::size_t bytes) override;
  void sum_peers(float* out, const float* const* parts, const ag::device* from,
                 std::size_t n_parts, std::size_t count) override;

  uint64_t export_memory(const void* ptr, char (&handle)[64], char (&event)[64]) override {
    return inner_.export_memory(ptr, handle, event);
  }
  const void* import_memory(const char (&handle)[64], uint32_t lane) override {
    return inner_.import_memory(handle, lane);
  }
  void wait_export(const char (&event)[64], uint32_t lane) override {
    inner_.wait_export(event, lane);
  }
  void forget_imports(uint32_t lane) noexcept override { inner_.forget_imports(lane); }
  void record_local(char (&event)[64]) override { inner_.record_local(event); }
  void wait_local(const char (&event)[64]) override { inner_.wait_local(event); }
  void register_host(void* base, std::size_t bytes) override { inner_.register_host(base, bytes); }
  void unregister_host(void* base) noexcept override { inner_.unregister_host(base); }
  void synchronize() override { inner_.synchronize(); }
  capture_outcome capture(const std::vector<recorded_call>& calls,
                          std::unique_ptr<stream_graph>& graph) override {
    return inner_.capture(calls, graph);
  }
  void launch(stream_graph& graph) override { inner_.launch(graph); }

private:
  template <class Args>
  void keep(Args&& args, bool host = false) {
    into_->push_back({op_, std::forward<Args>(args), host});
  }

  kernel_stream& inner_;
  std::vector<recorded_call>* into_ = nullptr;
  std::size_t op_ = 0;
};

} // namespace ag
