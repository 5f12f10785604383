// Values of every dtype as tests write and read them: one element of a dtype at a byte address
// from a double (floats rounded by the dtype's conversions, integers truncated and wrapped) and
// back, and reproducible test floats.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "actorgraph/dtype.hpp"

namespace ag::test {

inline void put_value(dtype t, char* p, double v) {
  const auto f = static_cast<float>(v);
  switch (t) {
    case dtype::float32: std::memcpy(p, &f, 4); break;
    case dtype::float16: {
      const half h(f);
      std::memcpy(p, &h, 2);
      break;
    }
    case dtype::bfloat16: {
      const bfloat16 h(f);
      std::memcpy(p, &h, 2);
      break;
    }
    case dtype::int32: {
      const auto x = static_cast<int32_t>(static_cast<int64_t>(v));
      std::memcpy(p, &x, 4);
      break;
    }
    case dtype::int64: {
      const auto x = static_cast<int64_t>(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case dtype::uint8: *p = static_cast<char>(static_cast<uint8_t>(static_cast<int64_t>(v))); break;
  }
}

inline double get_value(dtype t, const char* p) {
  switch (t) {
    case dtype::float32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case dtype::float16: {
      half h;
      std::memcpy(&h, p, 2);
      return static_cast<float>(h);
    }
    case dtype::bfloat16: {
      bfloat16 h;
      std::memcpy(&h, p, 2);
      return static_cast<float>(h);
    }
    case dtype::int32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case dtype::int64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    case dtype::uint8: return static_cast<uint8_t>(*p);
  }
  return 0.0;
}

// n floats in [-4, 4) that are multiples of 1/256 (exact in every floating dtype's float
// arithmetic), the same for the same seed.
inline std::vector<float> test_floats(std::size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 7;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    e = static_cast<float>(static_cast<int>(x >> 22) - 512) / 128.0f;
  }
  return v;
}

} // namespace ag::test
