// The CUDA entry points of a build without nvcc: cuda:N devices are then refused with a message
// that says why, and "auto" device selection sees no GPU and falls back to sim devices.
#include <string>

#include "actorgraph/error.hpp"
#include "cuda/kernel_stream.hpp"

namespace ag {

std::unique_ptr<kernel_stream> make_cuda_stream(int index) {
  throw error("cuda:" + std::to_string(index)
              + ": this build of actorgraph has no CUDA backend (nvcc was not found at configure "
                "time)");
}

int cuda_device_count() noexcept { return 0; }

int cuda_ordinal(int index) noexcept { return index; }

bool cuda_peer_access(int, int) noexcept { return false; }

void cuda_stream_wait(std::intptr_t, const char (&)[64]) {
  throw error("a CUDA stream cannot wait: this build of actorgraph has no CUDA backend");
}

} // namespace ag
