// The cpu kernel of every elementwise operator: the functors of elementwise_math.hpp over the
// operands' dtypes, along a contiguous run or a strided walk of the call's dimensions.
#include <cstdint>
#include <type_traits>

#include "cuda/cpu_kernels.hpp"
#include "cuda/elementwise_math.hpp"
#include "graph/op_table.hpp"

namespace ag::cpu {

namespace {

template <dtype T>
struct storage;
template <>
struct storage<dtype::float32> {
  using type = float;
  static float load(float x) { return x; }
};
template <>
struct storage<dtype::float16> {
  using type = half;
  static float load(half x) { return x; }
};
template <>
struct storage<dtype::bfloat16> {
  using type = bfloat16;
  static float load(bfloat16 x) { return x; }
};
template <>
struct storage<dtype::int32> {
  using type = int32_t;
  static int64_t load(int32_t x) { return x; }
};
template <>
struct storage<dtype::int64> {
  using type = int64_t;
  static int64_t load(int64_t x) { return x; }
};
template <>
struct storage<dtype::uint8> {
  using type = uint8_t;
  static int64_t load(uint8_t x) { return x; }
};

template <dtype T>
using value_t = typename storage<T>::type;

template <dtype T>
math::compute_t<T> load(const void* p, int64_t i) {
  return storage<T>::load(static_cast<const value_t<T>*>(p)[i]);
}

// Integers wrap to T's width; floats round to nearest, ties to even.
template <dtype T>
void store(void* p, int64_t i, math::compute_t<T> x) {
  static_cast<value_t<T>*>(p)[i] = static_cast<value_t<T>>(x);
}

// body(out index, a's, b's, c's) for every element, in row-major order.
template <class Body>
void walk(const elementwise_call& c, Body&& body) {
  const auto n = static_cast<int64_t>(c.count);
  if (c.rank == 0) {
    for (int64_t i = 0; i < n; ++i)
      body(i, i, i, i);
    return;
  }
  const int r = c.rank;
  const int64_t inner = c.shape[r - 1];
  const int64_t s0 = c.strides[0][r - 1], s1 = c.strides[1][r - 1], s2 = c.strides[2][r - 1];
  int64_t index[elementwise_call::max_rank] = {};
  int64_t off[3] = {0, 0, 0};
  for (int64_t i = 0; i < n; i += inner) {
    for (int64_t j = 0; j < inner; ++j)
      body(i + j, off[0] + j * s0, off[1] + j * s1, off[2] + j * s2);
    for (int d = r - 2; d >= 0; --d) { // the odometer over the outer dimensions
      for (int o = 0; o < 3; ++o)
        off[o] += c.strides[o][d];
      if (++index[d] < c.shape[d])
        break;
      for (int o = 0; o < 3; ++o)
        off[o] -= c.strides[o][d] * c.shape[d];
      index[d] = 0;
    }
  }
}

template <dtype Out, class F>
void unary(const elementwise_call& c, F f) {
  using C = math::compute_t<Out>;
  if constexpr (std::is_invocable_v<F, C>
                && (std::is_same_v<C, float> || math::takes_integers<F::kind>))
    walk(c, [&](int64_t i, int64_t a, int64_t, int64_t) {
      store<Out>(c.out, i, f(load<Out>(c.in[0], a)));
    });
}

template <dtype In, class F>
void binary(const elementwise_call& c, F f) {
  using C = math::compute_t<In>;
  if constexpr (std::is_invocable_v<F, C, C>
                && (std::is_same_v<C, float> || math::takes_integers<F::kind>)) {
    auto apply = [&](int64_t i, C x, C y) {
      if constexpr (math::is_comparison<F::kind>)
        store<dtype::uint8>(c.out, i, f(x, y));
      else
        store<In>(c.out, i, f(x, y));
    };
    if (c.in[1] == nullptr) {
      const C s = static_cast<C>(c.scalar);
      if (c.k == 1)
        walk(c, [&](int64_t i, int64_t a, int64_t, int64_t) { apply(i, s, load<In>(c.in[0], a)); });
      else
        walk(c, [&](int64_t i, int64_t a, int64_t, int64_t) { apply(i, load<In>(c.in[0], a), s); });
      return;
    }
    walk(c, [&](int64_t i, int64_t a, int64_t b, int64_t) {
      apply(i, load<In>(c.in[0], a), load<In>(c.in[1], b));
    });
  }
}

template <dtype Out>
void select(const elementwise_call& c) {
  walk(c, [&](int64_t i, int64_t a, int64_t b, int64_t d) {
    store<Out>(c.out, i,
               load<dtype::uint8>(c.in[0], a) != 0 ? load<Out>(c.in[1], b) : load<Out>(c.in[2], d));
  });
}

template <dtype Out, dtype In>
void convert(const elementwise_call& c) {
  walk(c, [&](int64_t i, int64_t a, int64_t, int64_t) {
    store<Out>(c.out, i, math::convert<Out>(load<In>(c.in[0], a)));
  });
}

} // namespace

void elementwise(const elementwise_call& c) noexcept {
  const op_family family = info(c.kind).family;
  if (family == op_family::select)
    return math::visit_dtype(c.out_type, [&](auto out) { select<decltype(out)::value>(c); });
  if (family == op_family::convert)
    return math::visit_dtype(c.out_type, [&](auto out) {
      math::visit_dtype(c.in_type, [&](auto in) {
        convert<decltype(out)::value, decltype(in)::value>(c);
      });
    });
  math::visit_dtype(c.in_type, [&](auto in) {
    constexpr dtype In = decltype(in)::value;
    math::visit_math(c.kind, c.k, [&](auto f) {
      using F = decltype(f);
      if constexpr (math::is_comparison<F::kind>)
        binary<In>(c, f);
      else if (family == op_family::unary)
        unary<In>(c, f);
      else
        binary<In>(c, f);
    });
  });
}

} // namespace ag::cpu
