// Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random
// numbers: as easy as 1, 2, 3", SC 2011), and the uniform and normal values rt.uniform() and
// rt.normal() make of it. Element i of a tensor depends only on (seed, i): any device computes any
// element, in any order, and gets the same bits. The same header compiles for the host and, under
// nvcc, for CUDA devices; every rounding step is spelled out (explicit fused multiply-adds, no
// library transcendental), so that cpu, sim and cuda give the same float for the same element.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define AG_HOST_DEVICE __host__ __device__
#else
#define AG_HOST_DEVICE
#endif

namespace ag {

// What a random fill draws: uniform in [a, b), or normal with mean a and standard deviation b.
enum class random_kind : uint8_t { uniform = 0, normal = 1 };

} // namespace ag

namespace ag::philox {

struct block {
  uint32_t x[4];
};

namespace detail {

AG_HOST_DEVICE inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Each rounding of the double arithmetic below, the same on either side: the CUDA intrinsics are
// never fused by the compiler; on the host the project builds with -ffp-contract=off.
AG_HOST_DEVICE inline double mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
AG_HOST_DEVICE inline double add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
AG_HOST_DEVICE inline double fma(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}
AG_HOST_DEVICE inline double div(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}
AG_HOST_DEVICE inline double sqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

// c[0] + c[1] x + ... + c[N-1] x^(N-1), by Horner's rule from the highest power.
template <int N>
AG_HOST_DEVICE inline double horner(double x, const double (&c)[N]) {
  double p = c[N - 1];
  for (int i = N - 2; i >= 0; --i)
    p = fma(p, x, c[i]);
  return p;
}

constexpr double ln2 = 0.6931471805599453094;
constexpr double ln2_24 = 16.635532333438687426; // 24 ln 2: ln 2^24
constexpr double two_pi = 6.283185307179586477;

// ln(k) for an integer 1 <= k <= 2^24, to about 1 ulp of a double: k = m * 2^e with m in
// [sqrt(1/2), sqrt(2)), ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series
// (its terms fall below 2^-60 of the first by s^21).
AG_HOST_DEVICE inline double log_of_count(uint32_t k) {
  int e = 0; // 2^e <= k < 2^(e+1)
  while ((k >> (e + 1)) != 0)
    ++e;
  double m = static_cast<double>(k) / static_cast<double>(uint32_t{1} << e); // exact, in [1, 2)
  if (m > 1.4142135623730951) { // to [sqrt(1/2), sqrt(2))
    m = m * 0.5;                 // exact
    ++e;
  }
  const double s = div(add(m, -1.0), add(m, 1.0));
  const double s2 = mul(s, s);
  double p = 1.0 / 21;
  for (int n = 19; n >= 1; n -= 2)
    p = fma(p, s2, 1.0 / n);
  return fma(static_cast<double>(e), ln2, mul(2.0, mul(s, p)));
}

// cos and sin of 2 pi t for t = j / 2^24, 0 <= j < 2^24: t is reduced exactly to r in [-1/8, 1/8]
// and a quarter turn q, and the Taylor series of the angle 2 pi r (|x| <= pi/4) run to x^18.
AG_HOST_DEVICE inline void cos_sin_turns(uint32_t j, double& c, double& s) {
  const uint32_t quarters = (j + (uint32_t{1} << 21)) >> 22; // the nearest quarter turn, 0 to 4
  const uint32_t q = quarters & 3u;
  const int64_t rj = static_cast<int64_t>(j) - (static_cast<int64_t>(quarters) << 22); // |rj| <= 2^21
  const double r = static_cast<double>(rj) * (1.0 / 16777216.0);               // exact
  const double x = mul(r, two_pi);
  const double x2 = mul(x, x);
  // sin x = x (1 - x^2/3! + x^4/5! - ... - x^18/19!), cos x = 1 - x^2/2! + ... - x^18/18!.
  const double sin_c[] = {1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800,
                          1.0 / 6227020800.0, -1.0 / 1307674368000.0, 1.0 / 355687428096000.0,
                          -1.0 / 121645100408832000.0};
  const double cos_c[] = {1.0, -1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800,
                          1.0 / 479001600.0, -1.0 / 87178291200.0, 1.0 / 20922789888000.0,
                          -1.0 / 6402373705728000.0};
  const double sp = horner(x2, sin_c), cp = horner(x2, cos_c);
  const double sn = mul(x, sp), cs = cp;
  switch (q) {
    case 0: c = cs, s = sn; break;
    case 1: c = -sn, s = cs; break;
    case 2: c = -cs, s = -sn; break;
    default: c = sn, s = -cs; break;
  }
}

} // namespace detail

// Philox4x32 with 10 rounds: the 128-bit counter ctr under the 64-bit key.
AG_HOST_DEVICE inline block philox4x32_10(block ctr, uint32_t key0, uint32_t key1) {
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    detail::mulhilo(0xD2511F53u, ctr.x[0], hi0, lo0);
    detail::mulhilo(0xCD9E8D57u, ctr.x[2], hi1, lo1);
    ctr = block{{hi1 ^ ctr.x[1] ^ key0, lo1, hi0 ^ ctr.x[3] ^ key1, lo0}};
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  return ctr;
}

// The four words of block `index` of the stream of `seed`: counter (index, 0), key seed.
AG_HOST_DEVICE inline block words(uint64_t seed, uint64_t index) {
  return philox4x32_10(
    block{{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, 0u}},
    static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Element i uniform in [low, high): word i % 4 of block i / 4, its top 24 bits as a fraction.
AG_HOST_DEVICE inline float uniform(uint64_t seed, uint64_t i, float low, float high) {
  const uint32_t w = words(seed, i / 4).x[i % 4];
  const double u = static_cast<double>(w >> 8) * (1.0 / 16777216.0); // exact, in [0, 1)
  const double span = detail::add(static_cast<double>(high), -static_cast<double>(low));
  const auto v = static_cast<float>(detail::fma(u, span, static_cast<double>(low)));
  if (v < high || !(low < high))
    return v;
#if defined(__CUDA_ARCH__)
  return ::nextafterf(high, low); // rounding to float reached high: [low, high) holds
#else
  return std::nextafter(high, low);
#endif
}

// Element i of a random fill of `kind` (random_kind: uniform in [a, b), normal with mean a and
// standard deviation b).
AG_HOST_DEVICE inline float draw(random_kind kind, uint64_t seed, uint64_t i, float a, float b);

// Element i normal with mean and std, by Box and Muller: block i / 4 gives two pairs of words
// (elements 4b, 4b+1 share words 0 and 1; 4b+2, 4b+3 words 2 and 3); the first of a pair takes
// the cosine, the second the sine.
AG_HOST_DEVICE inline float normal(uint64_t seed, uint64_t i, float mean, float std) {
  const block b = words(seed, i / 4);
  const unsigned pair = static_cast<unsigned>(i % 4) / 2;
  const uint32_t k = (b.x[2 * pair] >> 8) + 1; // in [1, 2^24]: u1 = k / 2^24 in (0, 1]
  const uint32_t j = b.x[2 * pair + 1] >> 8;   // u2 = j / 2^24 in [0, 1)
  const double ln_u1 = detail::add(detail::log_of_count(k), -detail::ln2_24);
  const double radius = detail::sqrt(detail::mul(-2.0, ln_u1 < 0 ? ln_u1 : 0.0));
  double c, s;
  detail::cos_sin_turns(j, c, s);
  const double z = detail::mul(radius, i % 2 == 0 ? c : s);
  return static_cast<float>(detail::fma(z, static_cast<double>(std), static_cast<double>(mean)));
}

AG_HOST_DEVICE inline float draw(random_kind kind, uint64_t seed, uint64_t i, float a, float b) {
  return kind == random_kind::normal ? normal(seed, i, a, b) : uniform(seed, i, a, b);
}

} // namespace ag::philox
