#include "cuda/cpu_kernels.hpp"

#include <algorithm>
#include <cstring>

namespace ag::cpu {

void fill(float* out, std::size_t count, float value) noexcept {
  std::fill(out, out + count, value);
}

namespace {

template <class F>
void elementwise(const float* a, const float* b, float* out, std::size_t count, F f) noexcept {
  for (std::size_t i = 0; i < count; ++i)
    out[i] = f(a[i], b[i]);
}

} // namespace

void binary(op_kind kind, const float* a, const float* b, float* out, std::size_t count) noexcept {
  switch (kind) {
    case op_kind::add: return elementwise(a, b, out, count, [](float x, float y) { return x + y; });
    case op_kind::sub: return elementwise(a, b, out, count, [](float x, float y) { return x - y; });
    case op_kind::mul: return elementwise(a, b, out, count, [](float x, float y) { return x * y; });
    case op_kind::div: return elementwise(a, b, out, count, [](float x, float y) { return x / y; });
    default: return;
  }
}

// NaN stays NaN, so that a NaN upstream is not hidden as a 0 (as fmaxf(x, 0) would). -0.0 and
// every other value not above 0 give +0.0, as in cuda_kernels.cu.
void relu(const float* a, float* out, std::size_t count) noexcept {
  for (std::size_t i = 0; i < count; ++i)
    out[i] = a[i] > 0.0f || a[i] != a[i] ? a[i] : 0.0f;
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
