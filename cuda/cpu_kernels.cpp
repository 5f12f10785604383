#include "cuda/cpu_kernels.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "cuda/host_values.hpp"

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

namespace {

// One [m, k] x [k, n] product at a, b, out: i-p-j order, so that the inner loop streams a row of
// b and a row of out (which vectorizes for row-major float32); each out[i, j] still sums its
// products in the order of p.
void product(const matmul_call& c, const char* a, const char* b, float* row, void* out) {
  const std::size_t size = size_of(c.type);
  for (int64_t i = 0; i < c.m; ++i) {
    std::fill(row, row + c.n, 0.0f);
    for (int64_t p = 0; p < c.k; ++p) {
      const float x = load_float(c.type, a, static_cast<uint64_t>(i * c.a_m + p * c.a_k));
      if (c.type == dtype::float32 && c.b_n == 1) {
        const float* brow = reinterpret_cast<const float*>(b) + p * c.b_k;
        for (int64_t j = 0; j < c.n; ++j)
          row[j] += x * brow[j];
      } else {
        for (int64_t j = 0; j < c.n; ++j)
          row[j] += x * load_float(c.type, b, static_cast<uint64_t>(p * c.b_k + j * c.b_n));
      }
    }
    char* dst = static_cast<char*>(out) + static_cast<std::size_t>(i * c.n) * size;
    for (int64_t j = 0; j < c.n; ++j)
      store_float(c.type, dst, static_cast<uint64_t>(j), row[j]);
  }
}

} // namespace

void matmul(const matmul_call& c) noexcept {
  const std::size_t size = size_of(c.type);
  std::vector<float> row(static_cast<std::size_t>(c.n));
  int64_t index[matmul_call::max_batch] = {};
  int64_t a_off = 0, b_off = 0;
  const int64_t batches = c.batches();
  for (int64_t q = 0; q < batches; ++q) {
    product(c, static_cast<const char*>(c.a) + a_off * static_cast<int64_t>(size),
            static_cast<const char*>(c.b) + b_off * static_cast<int64_t>(size), row.data(),
            static_cast<char*>(c.out) + q * c.m * c.n * static_cast<int64_t>(size));
    for (int d = c.batch_rank - 1; d >= 0; --d) { // the odometer over the batch
      a_off += c.a_batch[d];
      b_off += c.b_batch[d];
      if (++index[d] < c.batch[d])
        break;
      a_off -= c.a_batch[d] * c.batch[d];
      b_off -= c.b_batch[d] * c.batch[d];
      index[d] = 0;
    }
  }
}

} // namespace ag::cpu
