// The CUDA backend against the CPU reference kernels, on GPU 0. Tagged [cuda]: only run where a GPU
// exists, so a missing GPU here is a failure, not a skip.
#include <catch2/catch.hpp>

#include <limits>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actorgraph/error.hpp"
#include "cuda/caching_allocator.hpp"
#include "cuda/cpu_kernels.hpp"
#include "cuda/kernel_stream.hpp"
#include "tests/helpers/float_kernels.hpp"

#include <cuda_runtime_api.h>

namespace {

const std::vector<std::size_t> sizes = {0, 1, 1000, (std::size_t{1} << 20) + 3};

std::vector<float> random_floats(std::size_t count, uint32_t seed, float lo = -1.0f,
                                 float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (auto& x : v)
    x = dist(gen);
  return v;
}

// Divisors away from zero, either sign, so that div compares finite numbers.
std::vector<float> random_divisors(std::size_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(0.5f, 2.0f);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> v(count);
  for (auto& x : v)
    x = negative(gen) ? -dist(gen) : dist(gen);
  return v;
}

// Device memory from the stream, returned to it at scope exit.
class device_buffer {
public:
  device_buffer(ag::kernel_stream& s, std::size_t count)
    : stream_(s), bytes_(count * sizeof(float)),
      ptr_(static_cast<float*>(s.allocate(bytes_))) {}
  ~device_buffer() { stream_.deallocate(ptr_, bytes_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  float* get() const noexcept { return ptr_; }

private:
  ag::kernel_stream& stream_;
  std::size_t bytes_;
  float* ptr_;
};

void upload(ag::kernel_stream& s, float* dst, const std::vector<float>& src) {
  s.copy(dst, false, src.data(), true, src.size() * sizeof(float));
}

std::vector<float> download(ag::kernel_stream& s, const float* src, std::size_t count) {
  std::vector<float> out(count);
  s.copy(out.data(), true, src, false, count * sizeof(float));
  s.synchronize();
  return out;
}

// Bit-for-bit equality, with the first difference in the failure message; one REQUIRE per element
// would make a million-element check slow.
void require_identical(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  const auto count = got.size();
  std::size_t i = 0;
  while (i < count && std::memcmp(&got[i], &want[i], sizeof(float)) == 0)
    ++i;
  if (i < count) {
    INFO("first difference at element " << i << ": got " << got[i] << ", want " << want[i]);
    FAIL();
  }
}

std::unique_ptr<ag::kernel_stream> gpu0() {
  REQUIRE(ag::cuda_device_count() > 0);
  return ag::make_cuda_stream(0);
}

} // namespace

TEST_CASE("cuda fill matches the CPU reference", "[cuda]") {
  auto s = gpu0();
  for (std::size_t count : sizes) {
    INFO("count " << count);
    device_buffer out(*s, count);
    ag::test::fill(*s, out.get(), count, 3.25f);
    std::vector<float> want(count);
    ag::test::fill(want.data(), count, 3.25f);
    require_identical(download(*s, out.get(), count), want);
  }
}

TEST_CASE("cuda random fills give the CPU reference's bits, uniform and normal, from any first "
          "element",
          "[cuda][random]") {
  auto s = gpu0();
  for (auto kind : {ag::random_kind::uniform, ag::random_kind::normal}) {
    for (std::size_t count : sizes) {
      for (uint64_t first : {uint64_t{0}, uint64_t{3}, (uint64_t{1} << 34) + 1}) {
        INFO("kind " << static_cast<int>(kind) << ", count " << count << ", first " << first);
        device_buffer out(*s, count);
        s->random(kind, out.get(), count, 0x0123456789abcdefull, first, -2.0f, 3.0f);
        std::vector<float> want(count);
        ag::cpu::random(kind, want.data(), count, 0x0123456789abcdefull, first, -2.0f, 3.0f);
        require_identical(download(*s, out.get(), count), want);
      }
    }
  }
}

TEST_CASE("cuda add, sub, mul and div match the CPU reference bit for bit", "[cuda]") {
  auto s = gpu0();
  for (ag::op_kind kind : {ag::op_kind::add, ag::op_kind::sub, ag::op_kind::mul,
                           ag::op_kind::div}) {
    for (std::size_t count : sizes) {
      INFO("op kind " << static_cast<int>(kind) << ", count " << count);
      const auto a = random_floats(count, 1);
      const auto b = random_divisors(count, 2);
      device_buffer da(*s, count), db(*s, count), dout(*s, count);
      upload(*s, da.get(), a);
      upload(*s, db.get(), b);
      ag::test::binary(*s, kind, da.get(), db.get(), dout.get(), count);
      std::vector<float> want(count);
      ag::test::binary(kind, a.data(), b.data(), want.data(), count);
      require_identical(download(*s, dout.get(), count), want);
    }
  }
}

TEST_CASE("cuda binary computes in place when out is an input", "[cuda]") {
  auto s = gpu0();
  const std::size_t count = 1000;
  const auto a = random_floats(count, 3);
  const auto b = random_floats(count, 4);
  device_buffer da(*s, count), db(*s, count);
  upload(*s, da.get(), a);
  upload(*s, db.get(), b);
  ag::test::binary(*s, ag::op_kind::add, da.get(), db.get(), da.get(), count);
  std::vector<float> want(count);
  ag::test::binary(ag::op_kind::add, a.data(), b.data(), want.data(), count);
  require_identical(download(*s, da.get(), count), want);
}

TEST_CASE("cuda binary refuses an op kind that is not arithmetic", "[cuda]") {
  auto s = gpu0();
  device_buffer a(*s, 4);
  REQUIRE_THROWS_AS(ag::test::binary(*s, ag::op_kind::matmul, a.get(), a.get(), a.get(), 4), ag::error);
  s->synchronize(); // the refusal left no CUDA error behind
}

TEST_CASE("cuda relu matches the CPU reference", "[cuda]") {
  auto s = gpu0();
  for (std::size_t count : sizes) {
    INFO("count " << count);
    auto a = random_floats(count, 5);
    // The edge cases: both zeros must come out as +0, NaNs of either sign as themselves.
    if (count >= 4) {
      a[0] = 0.0f;
      a[1] = -0.0f;
      a[2] = std::numeric_limits<float>::quiet_NaN();
      a[3] = -std::numeric_limits<float>::quiet_NaN();
    }
    device_buffer da(*s, count), dout(*s, count);
    upload(*s, da.get(), a);
    ag::test::relu(*s, da.get(), dout.get(), count);
    std::vector<float> want(count);
    ag::test::relu(a.data(), want.data(), count);
    require_identical(download(*s, dout.get(), count), want);
  }
}

TEST_CASE("cuda sum matches the CPU reference within 1e-5", "[cuda]") {
  auto s = gpu0();
  for (std::size_t count : sizes) {
    INFO("count " << count);
    const auto a = random_floats(count, 6);
    device_buffer da(*s, count), dout(*s, 1);
    upload(*s, da.get(), a);
    ag::test::fill(*s, dout.get(), 1, 42.0f); // count 0 must overwrite this with 0
    s->sum(da.get(), dout.get(), count);
    float want = -1.0f;
    ag::cpu::sum(a.data(), &want, count);
    const float got = download(*s, dout.get(), 1)[0];
    if (count == 0)
      REQUIRE(got == 0.0f);
    else
      REQUIRE(got == Approx(want).epsilon(1e-5));
  }
}

TEST_CASE("cuda kernels index past 2^31 elements", "[cuda]") {
  // 8 GiB on the device, nothing on the host: fill, add in place and sum a tensor whose indices do
  // not fit in 32 bits. Every element is 2, so the exact sum is 2 * count, an integer that double
  // accumulation represents exactly.
  auto s = gpu0();
  const std::size_t count = (std::size_t{1} << 31) + 5;
  device_buffer a(*s, count), out(*s, 1);
  ag::test::fill(*s, a.get(), count, 1.0f);
  ag::test::binary(*s, ag::op_kind::add, a.get(), a.get(), a.get(), count);
  s->sum(a.get(), out.get(), count);
  REQUIRE(download(*s, out.get(), 1)[0] == static_cast<float>(2.0 * static_cast<double>(count)));
  // The last element, past the 32-bit range, was written too.
  REQUIRE(download(*s, a.get() + (count - 1), 1)[0] == 2.0f);
}

TEST_CASE("cuda matmul matches the CPU reference within 1e-4", "[cuda]") {
  auto s = gpu0();
  struct shape {
    std::size_t m, k, n;
  };
  for (const shape sh : {shape{1, 1, 1}, shape{17, 33, 9}, shape{256, 256, 256}, shape{3, 0, 4}}) {
    INFO("m " << sh.m << ", k " << sh.k << ", n " << sh.n);
    const auto a = random_floats(sh.m * sh.k, 8);
    const auto b = random_floats(sh.k * sh.n, 9);
    device_buffer da(*s, a.size()), db(*s, b.size()), dout(*s, sh.m * sh.n);
    upload(*s, da.get(), a);
    upload(*s, db.get(), b);
    ag::test::fill(*s, dout.get(), sh.m * sh.n, 42.0f); // k == 0 must overwrite this with zeros
    s->matmul(ag::plain_matmul(ag::dtype::float32, da.get(), db.get(), dout.get(),
                               static_cast<int64_t>(sh.m), static_cast<int64_t>(sh.k),
                               static_cast<int64_t>(sh.n)));
    std::vector<float> want(sh.m * sh.n);
    ag::cpu::matmul(a.data(), b.data(), want.data(), sh.m, sh.k, sh.n);
    const auto got = download(*s, dout.get(), want.size());

    // Relative to the magnitude of the terms, sum |a||b|: an element that cancels to near zero
    // has no meaningful relative error of its own.
    std::vector<float> abs_a(a.size()), abs_b(b.size()), scale(want.size());
    std::transform(a.begin(), a.end(), abs_a.begin(), [](float x) { return std::fabs(x); });
    std::transform(b.begin(), b.end(), abs_b.begin(), [](float x) { return std::fabs(x); });
    ag::cpu::matmul(abs_a.data(), abs_b.data(), scale.data(), sh.m, sh.k, sh.n);
    std::size_t bad = 0;
    std::size_t first_bad = want.size();
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (std::fabs(got[i] - want[i]) > 1e-4f * std::max(scale[i], 1e-30f)) {
        ++bad;
        first_bad = std::min(first_bad, i);
      }
    }
    if (bad > 0) {
      INFO(bad << " elements differ, first at " << first_bad << ": got " << got[first_bad]
                << ", want " << want[first_bad]);
      FAIL();
    }
  }
}

TEST_CASE("cuda copies round-trip host to device to host bit for bit", "[cuda]") {
  auto s = gpu0();
  for (std::size_t count : sizes) {
    INFO("count " << count);
    // Arbitrary bit patterns, NaNs and denormals included: a copy must not touch them.
    std::mt19937 gen(10);
    std::vector<uint32_t> bits(count);
    for (auto& x : bits)
      x = static_cast<uint32_t>(gen());
    std::vector<float> host(count);
    if (count > 0)
      std::memcpy(host.data(), bits.data(), count * sizeof(float));

    device_buffer d1(*s, count), d2(*s, count);
    upload(*s, d1.get(), host);
    s->copy(d2.get(), false, d1.get(), false, count * sizeof(float));
    std::vector<float> back(count);
    s->copy(back.data(), true, d2.get(), false, count * sizeof(float));
    s->synchronize();
    std::vector<float> host_copy(count);
    s->copy(host_copy.data(), true, host.data(), true, count * sizeof(float));
    if (count > 0) { // memcmp wants real pointers, which empty vectors need not have
      REQUIRE(std::memcmp(back.data(), host.data(), count * sizeof(float)) == 0);
      REQUIRE(std::memcmp(host_copy.data(), host.data(), count * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("cuda copies through registered host memory round-trip, pinning what they touch",
          "[cuda]") {
  auto s = gpu0();
  constexpr std::size_t bytes = std::size_t{256} << 20; // four pinning chunks
  constexpr std::size_t count = bytes / sizeof(float);
  std::unique_ptr<float, decltype(&std::free)> store(
    static_cast<float*>(std::aligned_alloc(4096, bytes)), &std::free);
  REQUIRE(store != nullptr);
  auto pinned = [](const void* p) {
    unsigned flags = 0;
    const bool yes = cudaHostGetFlags(&flags, const_cast<void*>(p)) == cudaSuccess;
    (void)cudaGetLastError();
    return yes;
  };
  s->register_host(store.get(), bytes);
  CHECK_FALSE(pinned(store.get())); // nothing is pinned before a copy needs it

  // A second stream registers the same memory and shares what the first pins.
  auto other = ag::make_cuda_stream(0);
  REQUIRE_NOTHROW(other->register_host(store.get(), bytes));

  const std::size_t n = std::size_t{1} << 20; // 4 MiB in the first chunk, 4 MiB in the last
  const auto data = random_floats(n, 11);
  std::memcpy(store.get(), data.data(), n * sizeof(float));
  device_buffer d(*s, n);
  // Store -> device, then device -> the store's last chunk: both sides pinned, fully async.
  s->copy(d.get(), false, store.get(), true, n * sizeof(float));
  s->copy(store.get() + count - n, true, d.get(), false, n * sizeof(float));
  s->synchronize();
  REQUIRE(std::memcmp(store.get() + count - n, data.data(), n * sizeof(float)) == 0);
  CHECK(pinned(store.get()));
  CHECK(pinned(store.get() + count - n));
  CHECK_FALSE(pinned(store.get() + count / 2 + n)); // an untouched chunk (for now)

  // A copy across a chunk boundary: two chunks, each pinned on its own.
  const std::size_t middle = count / 4 - n / 2;
  std::memcpy(store.get() + middle, data.data(), n * sizeof(float));
  {
    device_buffer d2(*other, n); // freed before its stream goes
    other->copy(d2.get(), false, store.get() + middle, true, n * sizeof(float));
    other->copy(store.get() + count / 2, true, d2.get(), false, n * sizeof(float));
    other->synchronize();
  }
  REQUIRE(std::memcmp(store.get() + count / 2, data.data(), n * sizeof(float)) == 0);
  CHECK(pinned(store.get() + count / 4)); // the second chunk, which the copy ran into
  s->unregister_host(store.get());
  CHECK(pinned(store.get())); // the other stream still uses the chunk
  other.reset();
  CHECK_FALSE(pinned(store.get()));
}

TEST_CASE("the cuda caching allocator reuses freed blocks", "[cuda]") {
  auto s = gpu0(); // binds this thread to GPU 0, as the allocator expects

  SECTION("through the stream") {
    void* p = s->allocate(1000);
    s->deallocate(p, 1000);
    void* q = s->allocate(1000);
    REQUIRE(q == p);
    s->deallocate(q, 1000);
  }

  SECTION("with live and cached bytes accounted") {
    ag::caching_allocator alloc(0);
    REQUIRE(alloc.live_bytes() == 0);
    void* p = alloc.allocate(1000);
    REQUIRE(alloc.live_bytes() == ag::caching_allocator::round_up(1000));
    alloc.deallocate(p, 1000);
    REQUIRE(alloc.live_bytes() == 0);
    REQUIRE(alloc.cached_bytes() == ag::caching_allocator::round_up(1000));

    // 1001 bytes fall in the same size class as 1000: the same block comes back.
    void* q = alloc.allocate(1001);
    REQUIRE(q == p);
    REQUIRE(alloc.cached_bytes() == 0);
    alloc.deallocate(q, 1001);

    void* big = alloc.allocate((std::size_t{3} << 20) + 1); // rounds to 4 MiB
    REQUIRE(alloc.live_bytes() == (std::size_t{4} << 20));
    alloc.deallocate(big, (std::size_t{3} << 20) + 1);
    REQUIRE(alloc.live_bytes() == 0);

    alloc.release_cache();
    REQUIRE(alloc.cached_bytes() == 0);
  }
}

TEST_CASE("a cuda allocation beyond the GPU's memory throws naming the device and the bytes",
          "[cuda]") {
  auto s = gpu0();
  const std::size_t huge = std::size_t{1} << 50; // 1 PiB
  try {
    s->allocate(huge);
    FAIL("allocating 1 PiB succeeded");
  } catch (const ag::error& e) {
    const std::string what = e.what();
    INFO(what);
    REQUIRE(what.find("cuda:0") != std::string::npos);
    REQUIRE(what.find(std::to_string(huge)) != std::string::npos);
  }
  // The failure left no error behind for the next kernel launch to trip over.
  device_buffer out(*s, 1);
  ag::test::fill(*s, out.get(), 1, 5.0f);
  REQUIRE(download(*s, out.get(), 1)[0] == 5.0f);
}

TEST_CASE("a cuda stream for a GPU that is not there throws naming it", "[cuda]") {
  const int count = ag::cuda_device_count();
  REQUIRE(count > 0);
  try {
    ag::make_cuda_stream(count);
    FAIL("a stream for cuda:" << count << " was created");
  } catch (const ag::error& e) {
    const std::string what = e.what();
    INFO(what);
    REQUIRE(what.find("cuda:" + std::to_string(count)) != std::string::npos);
  }
}
