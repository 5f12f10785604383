// The cpu kernels of the reductions, softmaxes, norms, index and random operators: plain loops
// over [m, k, n] (or rows [m, k]), sums in double in order, results rounded once to the dtype.
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <string>

#include "actorgraph/error.hpp"
#include "cuda/cpu_kernels.hpp"
#include "cuda/host_values.hpp"
#include "graph/philox.hpp"

namespace ag::cpu {

namespace {

float load(dtype t, const void* p, uint64_t i) { return load_float(t, p, i); }

void store(dtype t, void* p, uint64_t i, double x) {
  store_float(t, p, i, static_cast<float>(x));
}

int64_t index_at(dtype t, const void* p, uint64_t i) {
  return t == dtype::int32 ? static_cast<const int32_t*>(p)[i] : static_cast<const int64_t*>(p)[i];
}

const double nan_v = std::numeric_limits<double>::quiet_NaN();

// Over a [m, k, n]: f(o, i, at) where at(j) is the flat index of element (o, j, i).
template <class F>
void each_line(const row_call& c, F&& f) {
  for (uint64_t o = 0; o < c.m; ++o)
    for (uint64_t i = 0; i < c.n; ++i)
      f(o, i, [&](uint64_t j) { return (o * c.k + j) * c.n + i; });
}

void reduce(const row_call& c) {
  each_line(c, [&](uint64_t o, uint64_t i, auto at) {
    const uint64_t out = o * c.n + i;
    if (c.kind == op_kind::reduce_sum || c.kind == op_kind::reduce_mean) {
      double acc = 0.0;
      for (uint64_t j = 0; j < c.k; ++j)
        acc += load(c.in_type, c.a, at(j));
      if (c.kind == op_kind::reduce_mean)
        acc = c.k == 0 ? nan_v : acc / static_cast<double>(c.k);
      return store(c.type, c.out, out, acc);
    }
    // max and argmax: the first NaN wins, else the first of the largest.
    float best = -std::numeric_limits<float>::infinity();
    int64_t where = 0;
    for (uint64_t j = 0; j < c.k; ++j) {
      const float x = load(c.in_type, c.a, at(j));
      if (std::isnan(x)) {
        best = x;
        where = static_cast<int64_t>(j);
        break;
      }
      if (x > best || j == 0) {
        best = x;
        where = static_cast<int64_t>(j);
      }
    }
    if (c.kind == op_kind::argmax)
      static_cast<int64_t*>(c.out)[out] = where;
    else
      store(c.type, c.out, out, c.k == 0 ? -std::numeric_limits<double>::infinity() : best);
  });
}

void softmax(const row_call& c) {
  each_line(c, [&](uint64_t, uint64_t, auto at) {
    float top = -std::numeric_limits<float>::infinity();
    for (uint64_t j = 0; j < c.k; ++j)
      top = std::fmax(top, load(c.in_type, c.a, at(j)));
    double total = 0.0;
    for (uint64_t j = 0; j < c.k; ++j)
      total += std::exp(static_cast<double>(load(c.in_type, c.a, at(j))) - top);
    const double log_total = std::log(total);
    for (uint64_t j = 0; j < c.k; ++j) {
      const double shifted = static_cast<double>(load(c.in_type, c.a, at(j))) - top;
      store(c.type, c.out, at(j),
            c.kind == op_kind::softmax ? std::exp(shifted) / total : shifted - log_total);
    }
  });
}

// layer_norm: (x - mean) / sqrt(var + eps) * w + b, var biased; rms_norm: x / sqrt(mean(x^2) +
// eps) * w.
void norm(const row_call& c) {
  for (uint64_t r = 0; r < c.m; ++r) {
    const uint64_t base = r * c.k;
    double mean = 0.0, square = 0.0;
    for (uint64_t j = 0; j < c.k; ++j) {
      const double x = load(c.in_type, c.a, base + j);
      mean += x;
      square += x * x;
    }
    const double n = static_cast<double>(c.k);
    mean /= n;
    const bool layer = c.kind == op_kind::layer_norm;
    double var = 0.0;
    if (layer) {
      for (uint64_t j = 0; j < c.k; ++j) {
        const double d = load(c.in_type, c.a, base + j) - mean;
        var += d * d;
      }
      var /= n;
    }
    const double scale = 1.0 / std::sqrt((layer ? var : square / n) + c.scalar);
    for (uint64_t j = 0; j < c.k; ++j) {
      double y = (static_cast<double>(load(c.in_type, c.a, base + j)) - (layer ? mean : 0.0))
                 * scale;
      if (c.b)
        y *= load(c.in_type, c.b, j);
      if (c.c)
        y += load(c.in_type, c.c, j);
      store(c.type, c.out, base + j, y);
    }
  }
}


void pick(const row_call& c) {
  if (c.kind == op_kind::embedding) {
    for (uint64_t r = 0; r < c.n; ++r) {
      const int64_t row = index_at(c.in_type, c.b, r);
      if (row < 0 || static_cast<uint64_t>(row) >= c.m)
        throw error(ag::index_out_of_range(c.kind, r, row, c.m));
      for (uint64_t j = 0; j < c.k; ++j)
        store(c.type, c.out, r * c.k + j,
              load(c.type, c.a, static_cast<uint64_t>(row) * c.k + j));
    }
    return;
  }
  for (uint64_t r = 0; r < c.m; ++r) {
    const int64_t col = index_at(c.in_type, c.b, r);
    if (col < 0 || static_cast<uint64_t>(col) >= c.k)
      throw error(ag::index_out_of_range(c.kind, r, col, c.k));
    store(c.type, c.out, r, load(c.type, c.a, r * c.k + static_cast<uint64_t>(col)));
  }
}

void concat(const row_call& c) {
  const std::size_t size = size_of(c.type);
  const uint64_t width = c.m == 0 ? 0 : c.count / c.m;
  const uint64_t parts[3] = {c.k, c.n, width - c.k - c.n};
  const void* from[3] = {c.a, c.b, c.c};
  auto* out = static_cast<char*>(c.out);
  for (uint64_t row = 0; row < c.m; ++row)
    for (int p = 0; p < 3; ++p) {
      if (parts[p] == 0)
        continue;
      std::memcpy(out, static_cast<const char*>(from[p]) + row * parts[p] * size,
                  parts[p] * size);
      out += parts[p] * size;
    }
}

void draw(const row_call& c) {
  const auto kind = c.k == 0 ? random_kind::uniform : random_kind::normal;
  const auto lo = static_cast<float>(c.scalar), hi = static_cast<float>(c.scalar2);
  for (uint64_t i = 0; i < c.count; ++i)
    store(c.type, c.out, i, philox::draw(kind, c.m, c.n + i, lo, hi));
}

} // namespace

void rows(const row_call& c) {
  switch (c.kind) {
    case op_kind::reduce_sum:
    case op_kind::reduce_mean:
    case op_kind::reduce_max:
    case op_kind::argmax: return reduce(c);
    case op_kind::softmax:
    case op_kind::log_softmax: return softmax(c);
    case op_kind::layer_norm:
    case op_kind::rms_norm: return norm(c);
    case op_kind::embedding:
    case op_kind::gather: return pick(c);
    case op_kind::random: return draw(c);
    case op_kind::concat: return concat(c);
    default: throw error("cpu rows: " + to_string(c.kind) + " is not one of its operators");
  }
}

} // namespace ag::cpu

namespace ag {

std::string index_out_of_range(op_kind kind, uint64_t at, int64_t index, uint64_t size) {
  return to_string(kind) + ": index " + std::to_string(index) + " (at " + std::to_string(at)
         + ") is out of range for " + std::to_string(size) + " entries";
}

} // namespace ag
