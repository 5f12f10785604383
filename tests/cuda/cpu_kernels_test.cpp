// Tests of cuda/cpu_kernels: the reference every CUDA kernel is held to, checked in turn against
// the plainest loops that say what each kernel means.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cuda/cpu_kernels.hpp"
#include "tests/helpers/float_kernels.hpp"

namespace {

std::vector<float> random_values(std::size_t count, uint64_t seed, float lo = -10.0f,
                                 float hi = 10.0f) {
  std::mt19937_64 rng{seed};
  std::uniform_real_distribution<float> dist{lo, hi};
  std::vector<float> out(count);
  for (auto& x : out)
    x = dist(rng);
  return out;
}

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// Index of the first element whose bits differ, or count when all agree.
std::size_t first_difference(const std::vector<float>& x, const std::vector<float>& y) {
  REQUIRE(x.size() == y.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    if (bits(x[i]) != bits(y[i]))
      return i;
  return x.size();
}

constexpr float canary = -12345.0f;

using ag::test::binary;
using ag::test::fill;
using ag::test::relu;

} // namespace

TEST_CASE("cpu fill sets exactly count elements", "[cuda-ref]") {
  std::vector<float> out(10, canary);
  fill(out.data(), 7, 2.5f);
  for (std::size_t i = 0; i < 7; ++i)
    CHECK(out[i] == 2.5f);
  for (std::size_t i = 7; i < 10; ++i)
    CHECK(out[i] == canary);

  fill(out.data(), 10, -0.0f);
  for (float x : out)
    CHECK(bits(x) == bits(-0.0f));

  fill(out.data(), 0, 1.0f); // touches nothing
  CHECK(bits(out[0]) == bits(-0.0f));
}

TEST_CASE("cpu add, sub, mul and div match a plain loop bit for bit", "[cuda-ref]") {
  const std::size_t n = 1027; // not a multiple of any vector width
  const auto a = random_values(n, 1);
  auto b = random_values(n, 2);
  for (auto& x : b)
    if (x == 0.0f)
      x = 1.0f; // keep division finite

  struct named {
    ag::op_kind kind;
    float (*f)(float, float);
  };
  const named ops[] = {
    {ag::op_kind::add, [](float x, float y) { return x + y; }},
    {ag::op_kind::sub, [](float x, float y) { return x - y; }},
    {ag::op_kind::mul, [](float x, float y) { return x * y; }},
    {ag::op_kind::div, [](float x, float y) { return x / y; }},
  };
  for (const auto& op : ops) {
    INFO("op " << ag::to_string(op.kind));
    std::vector<float> expected(n);
    for (std::size_t i = 0; i < n; ++i)
      expected[i] = op.f(a[i], b[i]);
    std::vector<float> out(n + 1, canary);
    binary(op.kind, a.data(), b.data(), out.data(), n);
    CHECK(out[n] == canary);
    out.pop_back();
    CHECK(first_difference(out, expected) == n);
  }
}

TEST_CASE("cpu binary may write its result over an operand", "[cuda-ref]") {
  auto a = random_values(64, 3);
  const auto b = random_values(64, 4);
  std::vector<float> expected(64);
  for (std::size_t i = 0; i < 64; ++i)
    expected[i] = a[i] * b[i];
  binary(ag::op_kind::mul, a.data(), b.data(), a.data(), a.size());
  CHECK(first_difference(a, expected) == a.size());
}

TEST_CASE("cpu relu is max(x, 0) elementwise for numbers", "[cuda-ref]") {
  std::vector<float> a = random_values(1000, 5);
  a.insert(a.end(), {0.0f, -0.0f, 1e-45f, -1e-45f, std::numeric_limits<float>::max(),
                     std::numeric_limits<float>::lowest(), std::numeric_limits<float>::infinity(),
                     -std::numeric_limits<float>::infinity()});
  std::vector<float> expected(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    expected[i] = a[i] > 0.0f ? a[i] : 0.0f;
  std::vector<float> out(a.size(), canary);
  relu(a.data(), out.data(), a.size());
  CHECK(first_difference(out, expected) == a.size());
  for (float x : out)
    CHECK(x >= 0.0f);
  // -0.0 is not greater than 0, so it comes out as +0.0: the reference fixes the sign.
  CHECK_FALSE(std::signbit(out[1001]));
}

TEST_CASE("cpu relu keeps NaN as NaN, bit for bit, and gives +0.0 for -0.0", "[cuda-ref]") {
  const float quiet = std::numeric_limits<float>::quiet_NaN();
  const auto bits = [](float x) {
    uint32_t b = 0;
    std::memcpy(&b, &x, sizeof b);
    return b;
  };
  const auto from_bits = [](uint32_t b) {
    float x = 0;
    std::memcpy(&x, &b, sizeof x);
    return x;
  };
  // Quiet NaNs of both signs and with a payload; the signalling one is left out, as loading it
  // into a register may quiet it.
  const std::vector<float> nans{quiet, -quiet, from_bits(0x7fc00123u), from_bits(0xffc54321u)};
  std::vector<float> a = nans;
  a.insert(a.end(), {-0.0f, 0.0f, -1.0f, 2.5f, -std::numeric_limits<float>::infinity()});
  std::vector<float> out(a.size(), canary);
  relu(a.data(), out.data(), a.size());
  for (std::size_t i = 0; i < nans.size(); ++i) {
    INFO("input bits " << std::hex << bits(a[i]));
    CHECK(std::isnan(out[i]));
    CHECK(bits(out[i]) == bits(a[i]));
  }
  CHECK(bits(out[4]) == bits(0.0f)); // -0.0 -> +0.0, as before
  CHECK(bits(out[5]) == bits(0.0f));
  CHECK(bits(out[6]) == bits(0.0f));
  CHECK(out[7] == 2.5f);
  CHECK(bits(out[8]) == bits(0.0f));
}

TEST_CASE("cpu sum of 1..n is exact for small n", "[cuda-ref]") {
  for (std::size_t n : {1, 2, 3, 10, 100, 1000, 4096}) {
    std::vector<float> a(n);
    for (std::size_t i = 0; i < n; ++i)
      a[i] = static_cast<float>(i + 1);
    float out = canary;
    ag::cpu::sum(a.data(), &out, n);
    INFO("n = " << n);
    CHECK(out == static_cast<float>(n * (n + 1) / 2));
  }
}

TEST_CASE("cpu sum of nothing is zero", "[cuda-ref]") {
  float out = canary;
  ag::cpu::sum(nullptr, &out, 0);
  CHECK(out == 0.0f);
}

TEST_CASE("cpu sum of a million random values is within 1e-6 of a long double sum",
          "[cuda-ref]") {
  const std::size_t n = 1'000'000;
  // Mostly positive, so the exact sum is far from zero and a relative bound means something.
  const auto a = random_values(n, 6, -0.5f, 1.0f);
  long double exact = 0.0L;
  for (float x : a)
    exact += x;
  float out = canary;
  ag::cpu::sum(a.data(), &out, n);
  CHECK(std::fabs(static_cast<long double>(out) - exact) <= 1e-6L * std::fabs(exact));
}

namespace {

// out[i,j] = sum over p of a[i,p] * b[p,j], accumulated in double; scale[i,j] = sum of |a*b|,
// the size float rounding is relative to.
void reference_matmul(const std::vector<float>& a, const std::vector<float>& b, std::size_t m,
                      std::size_t k, std::size_t n, std::vector<double>& out,
                      std::vector<double>& scale) {
  out.assign(m * n, 0.0);
  scale.assign(m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double acc = 0.0, mag = 0.0;
      for (std::size_t p = 0; p < k; ++p) {
        const double x = static_cast<double>(a[i * k + p]) * b[p * n + j];
        acc += x;
        mag += std::fabs(x);
      }
      out[i * n + j] = acc;
      scale[i * n + j] = mag;
    }
}

} // namespace

TEST_CASE("cpu matmul matches a triple loop within a relative 1e-5", "[cuda-ref]") {
  struct dims {
    std::size_t m, k, n;
  };
  for (const dims d : {dims{1, 1, 1}, dims{3, 5, 7}, dims{64, 33, 17}, dims{17, 64, 1},
                       dims{1, 128, 33}}) {
    INFO("m=" << d.m << " k=" << d.k << " n=" << d.n);
    const auto a = random_values(d.m * d.k, 10 + d.m);
    const auto b = random_values(d.k * d.n, 20 + d.n);
    std::vector<double> expected, scale;
    reference_matmul(a, b, d.m, d.k, d.n, expected, scale);

    std::vector<float> out(d.m * d.n + 1, canary);
    ag::cpu::matmul(a.data(), b.data(), out.data(), d.m, d.k, d.n);
    CHECK(out.back() == canary);

    std::size_t bad = 0;
    for (std::size_t i = 0; i < d.m * d.n; ++i) {
      // Relative to the sum of |products|: mixed signs can cancel the result itself to near zero.
      const double tolerance = 1e-5 * scale[i] + 1e-30;
      if (!(std::fabs(out[i] - expected[i]) <= tolerance)) {
        if (bad++ < 5)
          FAIL_CHECK("element " << i << ": got " << out[i] << ", expected " << expected[i]);
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("cpu matmul of exactly representable values is exact", "[cuda-ref]") {
  // [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]]
  const float a[] = {1, 2, 3, 4};
  const float b[] = {5, 6, 7, 8};
  float out[4] = {canary, canary, canary, canary};
  ag::cpu::matmul(a, b, out, 2, 2, 2);
  CHECK(out[0] == 19.0f);
  CHECK(out[1] == 22.0f);
  CHECK(out[2] == 43.0f);
  CHECK(out[3] == 50.0f);

  // [1,3] x [3,2], not square.
  const float r[] = {1, 2, 3};
  const float c[] = {1, 0, 0, 1, 1, 1};
  float out2[2] = {canary, canary};
  ag::cpu::matmul(r, c, out2, 1, 3, 2);
  CHECK(out2[0] == 4.0f);
  CHECK(out2[1] == 5.0f);
}

TEST_CASE("cpu matmul with an inner dimension of 0 writes zeros", "[cuda-ref]") {
  const float unused = 1.0f;
  std::vector<float> out(4 * 3, std::numeric_limits<float>::quiet_NaN());
  ag::cpu::matmul(&unused, &unused, out.data(), 4, 0, 3);
  for (float x : out)
    CHECK(x == 0.0f);
}

TEST_CASE("a random fill on the cpu from element `first` is the stream from that element",
          "[graph][random]") {
  std::vector<float> whole(100), tail(60);
  ag::cpu::random(ag::random_kind::normal, whole.data(), whole.size(), 9, 0, 1.0f, 2.0f);
  ag::cpu::random(ag::random_kind::normal, tail.data(), tail.size(), 9, 40, 1.0f, 2.0f);
  CHECK(std::vector<float>(whole.begin() + 40, whole.end()) == tail);
  for (std::size_t i = 0; i < whole.size(); ++i)
    CHECK(whole[i] == ag::philox::normal(9, i, 1.0f, 2.0f));
}
