// tensor::device_bytes on a real GPU (thread mode): another library's stream reads a cuda:0
// tensor where it lies, after its writer (the stream waits on the runtime's event), and the memory
// stays past the runtime's end. Runs where a CUDA device is visible.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <vector>

#include <cuda_runtime_api.h>

#include <actorgraph/actorgraph.hpp>

namespace {

std::vector<float> read_on(cudaStream_t s, const void* p, std::size_t n) {
  std::vector<float> out(n);
  REQUIRE(cudaMemcpyAsync(out.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost, s)
          == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  return out;
}

} // namespace

TEST_CASE("another stream reads a cuda tensor in place after its writer, past the runtime",
          "[cuda]") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  std::shared_ptr<void> kept;
  std::vector<float> want;
  {
    ag::graph_option opt;
    opt.devices = ag::parse_devices("cuda:0");
    ag::runtime rt{opt};
    const auto a = rt.uniform({1024, 1024}, -1.0, 1.0, 9, ag::device::cuda(0));
    auto c = a;
    for (int i = 0; i < 10; ++i) // still running when the share is taken
      c = ag::matmul(c, a) * 0.03f;
    const auto p = c.device_bytes(reinterpret_cast<std::intptr_t>(s));
    const auto got = read_on(s, p.get(), 1024 * 1024);
    want = c.to_vector();
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    CHECK(c.device_bytes(1).get() == p.get()); // the legacy default stream; the same memory
    CHECK(ag::cuda_ordinal(ag::device::cuda(0)) == 0); // no AG_CUDA_ORDINALS
    kept = p;
  }
  const auto after = read_on(s, kept.get(), 1024 * 1024);
  CHECK(std::memcmp(after.data(), want.data(), want.size() * sizeof(float)) == 0);
  kept.reset(); // the lane's stream, and its memory, go now
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
}
