#include "cuda/cpu_kernels.hpp"

#include <algorithm>
#include <cstring>

namespace ag::cpu {

void fill(dtype t, void* out, std::size_t count, double value) noexcept {
  const uint64_t bits = fill_bits(t, value);
  switch (size_of(t)) {
    case 1: std::fill_n(static_cast<uint8_t*>(out), count, static_cast<uint8_t>(bits)); break;
    case 2: std::fill_n(static_cast<uint16_t*>(out), count, static_cast<uint16_t>(bits)); break;
    case 4: std::fill_n(static_cast<uint32_t*>(out), count, static_cast<uint32_t>(bits)); break;
    default: std::fill_n(static_cast<uint64_t*>(out), count, bits); break;
  }
}

void random(random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first, float a,
            float b) noexcept {
  for (std::size_t i = 0; i < count; ++i)
    out[i] = philox::draw(kind, seed, first + i, a, b);
}

void sum(const float* a, float* out, std::size_t count) noexcept {
  double acc = 0.0;
  for (std::size_t i = 0; i < count; ++i)
    acc += a[i];
  *out = static_cast<float>(acc);
}

void matmul(const float* a, const float* b, float* out, std::size_t m, std::size_t k,
            std::size_t n) noexcept {
  // i-k-j order: the inner loop streams a row of b and a row of out, which vectorizes.
  std::memset(out, 0, m * n * sizeof(float));
  for (std::size_t i = 0; i < m; ++i) {
    float* row = out + i * n;
    for (std::size_t p = 0; p < k; ++p) {
      const float x = a[i * k + p];
      const float* brow = b + p * n;
      for (std::size_t j = 0; j < n; ++j)
        row[j] += x * brow[j];
    }
  }
}

} // namespace ag::cpu
