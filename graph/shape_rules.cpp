#include "graph/shape_rules.hpp"

#include <algorithm>
#include <limits>

#include "actorgraph/error.hpp"

namespace ag::detail {

namespace {

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + ")";
}

} // namespace

std::string shape_string(const shape_t& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

uint64_t element_count(const shape_t& shape, const char* what) {
  if (shape.size() > max_dims)
    throw error(std::string{what} + ": shape " + shape_string(shape) + " has "
                + std::to_string(shape.size()) + " dimensions; at most "
                + std::to_string(max_dims));
  for (auto d : shape)
    if (d < 0)
      throw error(std::string{what} + ": negative dimension in shape " + shape_string(shape));
  // A dimension of 0 makes an empty tensor, however large the others are.
  if (std::find(shape.begin(), shape.end(), int64_t{0}) != shape.end())
    return 0;
  uint64_t n = 1;
  for (auto d : shape) {
    // Keep byte counts (8 * n, the widest element) representable.
    if (n > (std::numeric_limits<uint64_t>::max() / 8) / static_cast<uint64_t>(d))
      throw error(std::string{what} + ": shape " + shape_string(shape) + " has more elements than "
                  + std::to_string(std::numeric_limits<uint64_t>::max() / 8) + " (2^61 - 1)");
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

int64_t checked_product(int64_t a, int64_t b, const std::string& what) {
  int64_t out = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &out))
    throw error(what + ": " + std::to_string(a) + " * " + std::to_string(b)
                + " does not fit a dimension (at most 2^63 - 1)");
  return out;
}

std::size_t wrap_dim(int64_t dim, std::size_t dims, const char* what) {
  const auto n = static_cast<int64_t>(std::max<std::size_t>(dims, 1)); // a scalar takes 0 and -1
  if (dim < -n || dim >= n)
    throw error(std::string{what} + ": dimension " + std::to_string(dim) + " is out of range for "
                + std::to_string(dims) + " dimensions (expected " + std::to_string(-n) + " to "
                + std::to_string(n - 1) + ")");
  return static_cast<std::size_t>(dim < 0 ? dim + n : dim);
}

shape_t contiguous_strides(const shape_t& shape) {
  shape_t strides(shape.size());
  int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

shape_t broadcast_shapes(const shape_t& a, const shape_t& b, const char* what) {
  const std::size_t n = std::max(a.size(), b.size());
  shape_t out(n);
  for (std::size_t i = 0; i < n; ++i) { // i: counted from the last dimension
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1)
      throw error(std::string{what} + ": shapes " + shape_string(a) + " and " + shape_string(b)
                  + " do not broadcast (dimension " + std::to_string(-1 - static_cast<int64_t>(i))
                  + ": " + std::to_string(x) + " vs " + std::to_string(y) + ")");
    out[n - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

shape_t broadcast_strides(const shape_t& shape, const shape_t& strides, const shape_t& to) {
  shape_t out(to.size(), 0);
  const std::size_t lead = to.size() - shape.size();
  for (std::size_t i = 0; i < shape.size(); ++i)
    out[lead + i] = shape[i] == 1 && to[lead + i] != 1 ? 0 : strides[i];
  return out;
}

shape_t reshape_shape(const shape_t& from, const shape_t& to, const char* what) {
  const uint64_t have = element_count(from, what);
  auto cannot_hold = [&] {
    return error(std::string{what} + ": shape " + shape_string(to) + " cannot hold the "
                 + std::to_string(have) + " elements of " + shape_string(from));
  };
  shape_t out = to;
  std::size_t inferred = out.size();
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1 && inferred != out.size())
      throw error(std::string{what} + ": shape " + shape_string(to)
                  + " infers more than one dimension (-1)");
    if (out[i] == -1)
      inferred = i;
    else if (out[i] < 0)
      throw error(std::string{what} + ": invalid dimension " + std::to_string(out[i])
                  + " in shape " + shape_string(to) + " (a size, or -1 to infer one)");
  }
  // The elements of the dimensions given: 0 with any 0 among them, however large the others.
  uint64_t known = 1;
  const bool zero = std::find(out.begin(), out.end(), int64_t{0}) != out.end();
  for (std::size_t i = 0; i < out.size() && !zero; ++i)
    if (i != inferred && __builtin_mul_overflow(known, static_cast<uint64_t>(out[i]), &known))
      throw cannot_hold(); // more than 2^64, where `have` is below 2^61
  if (zero)
    known = 0;
  if (inferred != out.size()) {
    if (known == 0 || have % known != 0)
      throw cannot_hold();
    out[inferred] = static_cast<int64_t>(have / known);
  } else if (known != have) {
    throw cannot_hold();
  }
  element_count(out, what); // at most max_dims dimensions
  return out;
}

std::vector<std::size_t> permutation(const shape_t& shape, const std::vector<int64_t>& dims,
                                     const char* what) {
  if (dims.size() != shape.size())
    throw error(std::string{what} + ": order " + dims_string(dims) + " names "
                + std::to_string(dims.size()) + " dimensions; shape " + shape_string(shape)
                + " has " + std::to_string(shape.size()));
  std::vector<std::size_t> perm;
  std::vector<bool> seen(shape.size(), false);
  for (int64_t d : dims) {
    const std::size_t i = wrap_dim(d, shape.size(), what);
    if (seen[i])
      throw error(std::string{what} + ": order " + dims_string(dims) + " repeats dimension "
                  + std::to_string(i));
    seen[i] = true;
    perm.push_back(i);
  }
  return perm;
}

shape_t permuted(const shape_t& values, const std::vector<std::size_t>& perm) {
  shape_t out;
  out.reserve(perm.size());
  for (std::size_t i : perm)
    out.push_back(values[i]);
  return out;
}

slice_bounds clamp_slice(int64_t start, int64_t end, int64_t size) {
  auto clamp = [size](int64_t x) {
    if (x < 0)
      x = x < -size ? 0 : x + size;
    return std::min(x, size);
  };
  slice_bounds b{clamp(start), clamp(end)};
  b.end = std::max(b.end, b.start);
  return b;
}

shape_t cat_shape(const std::vector<shape_t>& shapes, int64_t dim, const char* what) {
  if (shapes.empty())
    throw error(std::string{what} + ": no tensors to join");
  const shape_t& first = shapes.front();
  if (first.empty())
    throw error(std::string{what} + ": a scalar (shape []) cannot be joined; reshape it to [1]");
  const std::size_t d = wrap_dim(dim, first.size(), what);
  shape_t out = first;
  out[d] = 0;
  for (std::size_t t = 0; t < shapes.size(); ++t) {
    const shape_t& s = shapes[t];
    bool fits = s.size() == first.size();
    for (std::size_t i = 0; fits && i < s.size(); ++i)
      fits = i == d || s[i] == first[i];
    if (!fits)
      throw error(std::string{what} + ": tensor " + std::to_string(t) + " of shape "
                  + shape_string(s) + " does not match tensor 0 of shape " + shape_string(first)
                  + " but along dimension " + std::to_string(d));
    if (__builtin_add_overflow(out[d], s[d], &out[d]))
      throw error(std::string{what} + ": the joined dimension " + std::to_string(d)
                  + " exceeds 2^63 - 1");
  }
  element_count(out, what);
  return out;
}

std::vector<std::size_t> reduced_dims(const shape_t& shape, const std::vector<int64_t>& dims,
                                      const char* what) {
  std::vector<std::size_t> out;
  if (dims.empty()) {
    for (std::size_t i = 0; i < shape.size(); ++i)
      out.push_back(i);
    return out;
  }
  for (int64_t d : dims) {
    const std::size_t i = wrap_dim(d, shape.size(), what);
    if (std::find(out.begin(), out.end(), i) != out.end())
      throw error(std::string{what} + ": dimensions " + dims_string(dims) + " repeat dimension "
                  + std::to_string(i));
    out.push_back(i);
  }
  if (shape.empty()) // a scalar reduced over 0 or -1 stays a scalar
    out.clear();
  std::sort(out.begin(), out.end());
  return out;
}

shape_t reduce_shape(const shape_t& shape, const std::vector<std::size_t>& reduced, bool keepdim) {
  shape_t out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const bool r = std::find(reduced.begin(), reduced.end(), i) != reduced.end();
    if (!r)
      out.push_back(shape[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

matmul_plan plan_matmul(const shape_t& a, const shape_t& b, const char* what) {
  if (a.empty() || b.empty())
    throw error(std::string{what} + ": both operands need at least one dimension, got shapes "
                + shape_string(a) + " and " + shape_string(b));
  matmul_plan p;
  p.m = a.size() == 1 ? 1 : a[a.size() - 2];
  p.k = a.back();
  const int64_t kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  p.n = b.size() == 1 ? 1 : b.back();
  if (p.k != kb)
    throw error(std::string{what} + ": shapes " + shape_string(a) + " and " + shape_string(b)
                + " cannot be multiplied (" + std::to_string(p.k) + " vs " + std::to_string(kb)
                + " in the inner dimension)");
  p.a_batch = a.size() > 2 ? shape_t(a.begin(), a.end() - 2) : shape_t{};
  p.b_batch = b.size() > 2 ? shape_t(b.begin(), b.end() - 2) : shape_t{};
  try {
    p.batch = broadcast_shapes(p.a_batch, p.b_batch, what);
  } catch (const error&) {
    throw error(std::string{what} + ": the batch dimensions of shapes " + shape_string(a) + " and "
                + shape_string(b) + " do not broadcast (" + shape_string(p.a_batch) + " vs "
                + shape_string(p.b_batch) + ")");
  }
  p.out = p.batch;
  if (a.size() > 1)
    p.out.push_back(p.m);
  if (b.size() > 1)
    p.out.push_back(p.n);
  element_count(p.out, what);
  return p;
}

} // namespace ag::detail
