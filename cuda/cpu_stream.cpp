// The kernel stream of cpu and sim devices: the reference kernels, run at once on the caller's
// thread, so a sim device keeps a GPU stream's in-order semantics without a GPU.
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <new>
#include <vector>

#include "actorgraph/error.hpp"
#include "cuda/cpu_kernels.hpp"
#include "cuda/kernel_stream.hpp"

namespace ag {

namespace {

class cpu_stream final : public kernel_stream {
public:
  explicit cpu_stream(ag::device d) : device_(d) {}

  // What its runner left to it goes with it, as a CUDA stream's allocator frees its blocks.
  ~cpu_stream() override {
    for (void* p : left_)
      std::free(p);
    holding_ = false;
    trim(0);
  }

  cpu_stream(const cpu_stream&) = delete;
  cpu_stream& operator=(const cpu_stream&) = delete;

  ag::device device() const noexcept override { return device_; }

  void* allocate(std::size_t bytes) override {
    const std::size_t rounded = rounded_size(bytes);
    if (auto it = cache_.find(rounded); it != cache_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= rounded;
      return p;
    }
    void* p = std::aligned_alloc(align, rounded);
    if (p == nullptr)
      throw error("allocate on " + device_.str() + ": out of host memory for "
                  + std::to_string(bytes) + " bytes");
    return p;
  }

  // Into a cache by size, as a CUDA stream's allocator does, so that a step run again gets the
  // same memory; past max_cached bytes the rest goes back, unless frees are held.
  void deallocate(void* ptr, std::size_t bytes) noexcept override {
    const std::size_t rounded = rounded_size(bytes);
    try {
      cache_[rounded].push_back(ptr);
      cached_bytes_ += rounded;
    } catch (...) {
      std::free(ptr);
      return;
    }
    if (!holding_)
      trim(max_cached);
  }

  void hold_frees(bool hold) noexcept override {
    holding_ = hold;
    if (!hold)
      trim(max_cached);
  }

  // Without room to note it, the block stays allocated: another library may still read it.
  void leave(void* ptr, std::size_t) noexcept override {
    try {
      left_.push_back(ptr);
    } catch (...) {
    }
  }

  void fill(dtype t, void* out, std::size_t count, double value) override {
    cpu::fill(t, out, count, value);
  }

  void elementwise(const elementwise_call& call) override { cpu::elementwise(call); }
  void rows(const row_call& call) override { cpu::rows(call); }

  void random(random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first,
              float a, float b) override {
    cpu::random(kind, out, count, seed, first, a, b);
  }

  void sum(const float* a, float* out, std::size_t count) override { cpu::sum(a, out, count); }

  void matmul(const matmul_call& call) override { cpu::matmul(call); }

  void copy(void* dst, bool, const void* src, bool, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }

  void copy_peer(void* dst, const void* src, const ag::device&, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }

  // The parts' order, as the store path's adds (bit for bit the same sums).
  void sum_peers(float* out, const float* const* parts, const ag::device*, std::size_t n_parts,
                 std::size_t count) override {
    if (n_parts == 0)
      return cpu::fill(dtype::float32, out, count, 0.0);
    if (n_parts == 1)
      return void(std::memmove(out, parts[0], count * sizeof(float)));
    cpu::elementwise(contiguous_call(op_kind::add, dtype::float32, out, parts[0], parts[1], count));
    for (std::size_t r = 2; r < n_parts; ++r)
      cpu::elementwise(contiguous_call(op_kind::add, dtype::float32, out, out, parts[r], count));
  }

  void synchronize() override {}

private:
  static constexpr std::size_t max_cached = std::size_t{64} << 20;
  static constexpr std::size_t align = 64;

  // 64-byte alignment, as the store and CUDA give; at least one line so that empty tensors still
  // get a distinct address.
  static std::size_t rounded_size(std::size_t bytes) noexcept {
    return bytes == 0 ? align : (bytes + align - 1) / align * align;
  }

  // Gives cached blocks back until at most `keep` bytes are cached, the largest first.
  void trim(std::size_t keep) noexcept {
    for (auto it = cache_.begin(); cached_bytes_ > keep && it != cache_.end();) {
      while (!it->second.empty() && cached_bytes_ > keep) {
        std::free(it->second.back());
        it->second.pop_back();
        cached_bytes_ -= it->first;
      }
      it = it->second.empty() ? cache_.erase(it) : std::next(it);
    }
  }

  ag::device device_;
  std::vector<void*> left_; // by its runner (naive_runner::abandon), freed with the stream
  std::map<std::size_t, std::vector<void*>, std::greater<>> cache_; // free blocks by size
  std::size_t cached_bytes_ = 0;
  bool holding_ = false; // a step is being recorded: what it frees may still be read
};

} // namespace

uint64_t kernel_stream::export_memory(const void*, char (&)[64], char (&)[64]) {
  throw error(device().str() + ": its memory cannot be shared with another process (only CUDA "
                               "memory can, through CUDA IPC)");
}

const void* kernel_stream::import_memory(const char (&)[64], uint32_t lane) {
  throw error(device().str() + ": cannot map the memory of lane " + std::to_string(lane)
              + " from another process (only CUDA memory can be, through CUDA IPC)");
}

void kernel_stream::wait_export(const char (&)[64], uint32_t lane) {
  throw error(device().str() + ": cannot wait for an event of lane " + std::to_string(lane)
              + " from another process (only CUDA streams can, through CUDA IPC)");
}

std::unique_ptr<kernel_stream> make_cpu_stream(const ag::device& d) {
  return std::make_unique<cpu_stream>(d);
}

std::unique_ptr<kernel_stream> make_stream(const ag::device& d) {
  if (d.type == device::kind::cuda)
    return make_cuda_stream(d.index);
  return make_cpu_stream(d);
}

} // namespace ag
