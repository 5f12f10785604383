// Counter-based random numbers (graph/philox.hpp): Philox4x32-10 against Random123's published
// known answers, its log and cos/sin against the C library in double precision, and the uniform
// and normal values against their definitions and their distributions' moments.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "graph/philox.hpp"

namespace px = ag::philox;

TEST_CASE("Philox4x32-10 gives Random123's known answers", "[graph][random]") {
  auto run = [](px::block ctr, uint32_t k0, uint32_t k1) {
    const auto b = px::philox4x32_10(ctr, k0, k1);
    return std::vector<uint32_t>{b.x[0], b.x[1], b.x[2], b.x[3]};
  };
  CHECK(run({{0, 0, 0, 0}}, 0, 0)
        == std::vector<uint32_t>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(run({{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}}, 0xffffffff, 0xffffffff)
        == std::vector<uint32_t>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(run({{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822, 0x299f31d0)
        == std::vector<uint32_t>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("the log of a count is within 2 ulp of the C library's, for every count up to 2^24",
          "[graph][random]") {
  double worst = 0;
  for (uint32_t k = 1; k <= (uint32_t{1} << 24); ++k) {
    const double ref = std::log(static_cast<double>(k));
    const double got = px::detail::log_of_count(k);
    const double ulp = std::max(std::abs(ref), 1.0) * std::numeric_limits<double>::epsilon();
    worst = std::max(worst, std::abs(got - ref) / ulp);
  }
  CHECK(worst <= 2.0);
}

TEST_CASE("cos and sin of a turn are within 4e-16 of the C library's in double precision",
          "[graph][random]") {
  double worst = 0;
  for (uint32_t j = 0; j < (uint32_t{1} << 24); j += 3) {
    double c = 0, s = 0;
    px::detail::cos_sin_turns(j, c, s);
    // The reference angle in long double: 2 pi j / 2^24.
    const long double a = 6.283185307179586476925286766559L * j / 16777216.0L;
    worst = std::max({worst, std::abs(c - static_cast<double>(std::cos(a))),
                      std::abs(s - static_cast<double>(std::sin(a)))});
  }
  CHECK(worst <= 4e-16);
}

TEST_CASE("uniform values lie from low up to but not including high, are multiples of 2^-24 "
          "from 0 to 1, and have the moments of a uniform distribution",
          "[graph][random]") {
  constexpr int n = 1 << 20;
  double sum = 0, sq = 0;
  for (int i = 0; i < n; ++i) {
    const float u = px::uniform(42, static_cast<uint64_t>(i), 0.0f, 1.0f);
    REQUIRE(u >= 0.0f);
    REQUIRE(u < 1.0f);
    REQUIRE(std::ldexp(static_cast<double>(u), 24) == std::floor(std::ldexp(u, 24)));
    sum += u;
    sq += static_cast<double>(u) * u;
  }
  // Mean 1/2 and variance 1/12; five standard errors.
  const double mean = sum / n, var = sq / n - mean * mean;
  CHECK(std::abs(mean - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::abs(var - 1.0 / 12) < 5 * 0.0745 / std::sqrt(static_cast<double>(n)));
  for (int i = 0; i < 1000; ++i) {
    const float v = px::uniform(7, static_cast<uint64_t>(i), -3.0f, 5.0f);
    CHECK(v >= -3.0f);
    CHECK(v < 5.0f);
  }
  // Rounding to float can reach the upper end: it never is returned.
  CHECK(px::uniform(0, 0, 1.0f, std::nextafter(1.0f, 2.0f)) < std::nextafter(1.0f, 2.0f));
}

TEST_CASE("a value depends on the seed and its element alone", "[graph][random]") {
  std::vector<float> forward, backward(64);
  for (uint64_t i = 0; i < 64; ++i)
    forward.push_back(px::normal(5, i, 0.0f, 1.0f));
  for (uint64_t i = 64; i-- > 0;)
    backward[i] = px::normal(5, i, 0.0f, 1.0f);
  CHECK(forward == backward);
  int same = 0;
  for (uint64_t i = 0; i < 64; ++i)
    same += px::normal(6, i, 0.0f, 1.0f) == forward[i];
  CHECK(same == 0);
  // The upper half of the seed matters too.
  CHECK(px::uniform(uint64_t{1} << 32, 0, 0.0f, 1.0f) != px::uniform(0, 0, 0.0f, 1.0f));
}

TEST_CASE("normal values are Box-Muller's of the block's words, and have the moments of a "
          "normal distribution",
          "[graph][random]") {
  constexpr int n = 1 << 20;
  double sum = 0, sq = 0, worst_ulps = 0;
  for (int i = 0; i < n; ++i) {
    const auto e = static_cast<uint64_t>(i);
    const float z = px::normal(3, e, 0.0f, 1.0f);
    sum += z;
    sq += static_cast<double>(z) * z;
    // Reference from the definition, with the C library in long double.
    const auto b = px::words(3, e / 4);
    const unsigned pair = static_cast<unsigned>(e % 4) / 2;
    const long double u1 = ((b.x[2 * pair] >> 8) + 1) / 16777216.0L;
    const long double u2 = (b.x[2 * pair + 1] >> 8) / 16777216.0L;
    const long double r = std::sqrt(-2 * std::log(u1));
    const long double a = 6.283185307179586476925286766559L * u2;
    const auto ref = static_cast<float>(r * (e % 2 == 0 ? std::cos(a) : std::sin(a)));
    const float ulp = std::nextafter(std::abs(ref), INFINITY) - std::abs(ref);
    worst_ulps = std::max(worst_ulps, static_cast<double>(std::abs(z - ref) / ulp));
  }
  CHECK(worst_ulps <= 1.0); // the float nearest the exact value, or its neighbour
  const double mean = sum / n, var = sq / n - mean * mean;
  CHECK(std::abs(mean) < 5 / std::sqrt(static_cast<double>(n)));
  CHECK(std::abs(var - 1) < 5 * std::sqrt(2.0 / n));
  CHECK(px::normal(3, 0, 2.0f, 0.0f) == 2.0f); // std 0: the mean itself
}
