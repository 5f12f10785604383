// The math of every elementwise operator, once, for the cpu kernels (cpu_kernels.cpp) and the CUDA
// kernels (elementwise.cu): one functor per op_kind, on the compute type of the operands' dtype
// (float for float32, float16 and bfloat16; int64_t for int32, int64 and uint8). Arithmetic,
// comparisons and selections give the same bits on either side; exp, log, tanh, erf and pow come
// from each side's math library and may differ in the last place (docs/OPERATORS.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "actorgraph/dtype.hpp"
#include "graph/op.hpp"

#if defined(__CUDACC__)
#define AG_HD __host__ __device__ __forceinline__
#else
#define AG_HD inline
#endif

namespace ag::math {

AG_HD uint32_t bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
#endif
}

AG_HD bool is_nan(float x) { return (bits(x) & 0x7fffffffu) > 0x7f800000u; }
AG_HD bool is_nan(int64_t) { return false; }

// Integer arithmetic wraps (two's complement), as PyTorch's does: computed on the unsigned type.
AG_HD int64_t wrap(uint64_t x) { return static_cast<int64_t>(x); }

template <op_kind K>
struct fn;

// What every fn<K> derives from: its kind, for the kernels' compile-time choices.
template <op_kind K>
struct kind_of {
  static constexpr op_kind kind = K;
};

template <>
struct fn<op_kind::add> : kind_of<op_kind::add> {
  AG_HD float operator()(float x, float y) const { return x + y; }
  AG_HD int64_t operator()(int64_t x, int64_t y) const {
    return wrap(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
  }
};
template <>
struct fn<op_kind::sub> : kind_of<op_kind::sub> {
  AG_HD float operator()(float x, float y) const { return x - y; }
  AG_HD int64_t operator()(int64_t x, int64_t y) const {
    return wrap(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
  }
};
template <>
struct fn<op_kind::mul> : kind_of<op_kind::mul> {
  AG_HD float operator()(float x, float y) const { return x * y; }
  AG_HD int64_t operator()(int64_t x, int64_t y) const {
    return wrap(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
  }
};
template <>
struct fn<op_kind::div> : kind_of<op_kind::div> {
  AG_HD float operator()(float x, float y) const { return x / y; }
};
// NaN if either is NaN (the first NaN, as it is); otherwise the larger, +0 over -0 left as found.
template <>
struct fn<op_kind::maximum> : kind_of<op_kind::maximum> {
  template <class C>
  AG_HD C operator()(C x, C y) const {
    return is_nan(x) ? x : is_nan(y) ? y : x < y ? y : x;
  }
};
template <>
struct fn<op_kind::minimum> : kind_of<op_kind::minimum> {
  template <class C>
  AG_HD C operator()(C x, C y) const {
    return is_nan(x) ? x : is_nan(y) ? y : y < x ? y : x;
  }
};
template <>
struct fn<op_kind::pow> : kind_of<op_kind::pow> {
  AG_HD float operator()(float x, float y) const { return ::powf(x, y); }
};

// Comparisons: 1 or 0 (NaN compares unequal to everything, itself included).
template <>
struct fn<op_kind::eq> : kind_of<op_kind::eq> {
  template <class C>
  AG_HD int64_t operator()(C x, C y) const { return x == y; }
};
template <>
struct fn<op_kind::ne> : kind_of<op_kind::ne> {
  template <class C>
  AG_HD int64_t operator()(C x, C y) const { return x != y; }
};
template <>
struct fn<op_kind::lt> : kind_of<op_kind::lt> {
  template <class C>
  AG_HD int64_t operator()(C x, C y) const { return x < y; }
};
template <>
struct fn<op_kind::le> : kind_of<op_kind::le> {
  template <class C>
  AG_HD int64_t operator()(C x, C y) const { return x <= y; }
};
template <>
struct fn<op_kind::gt> : kind_of<op_kind::gt> {
  template <class C>
  AG_HD int64_t operator()(C x, C y) const { return x > y; }
};
template <>
struct fn<op_kind::ge> : kind_of<op_kind::ge> {
  template <class C>
  AG_HD int64_t operator()(C x, C y) const { return x >= y; }
};

template <>
struct fn<op_kind::neg> : kind_of<op_kind::neg> {
  AG_HD float operator()(float x) const { return -x; }
  AG_HD int64_t operator()(int64_t x) const { return wrap(0u - static_cast<uint64_t>(x)); }
};
template <>
struct fn<op_kind::abs> : kind_of<op_kind::abs> {
  AG_HD float operator()(float x) const { return ::fabsf(x); }
  AG_HD int64_t operator()(int64_t x) const {
    return x < 0 ? wrap(0u - static_cast<uint64_t>(x)) : x;
  }
};
// NaN stays NaN (its very bits), -0.0 gives +0.0; decided on the bits, since nvcc turns float
// compares into max.NaN, which returns the canonical NaN.
template <>
struct fn<op_kind::relu> : kind_of<op_kind::relu> {
  AG_HD float operator()(float x) const {
    const uint32_t b = bits(x);
    const bool positive = static_cast<int32_t>(b) > 0; // sign clear, not +0 (+inf, +NaN too)
    return positive || is_nan(x) ? x : 0.0f;
  }
  AG_HD int64_t operator()(int64_t x) const { return x > 0 ? x : 0; }
};
template <>
struct fn<op_kind::exp> : kind_of<op_kind::exp> {
  AG_HD float operator()(float x) const { return ::expf(x); }
};
template <>
struct fn<op_kind::log> : kind_of<op_kind::log> {
  AG_HD float operator()(float x) const { return ::logf(x); }
};
template <>
struct fn<op_kind::sqrt> : kind_of<op_kind::sqrt> {
  AG_HD float operator()(float x) const { return ::sqrtf(x); }
};
template <>
struct fn<op_kind::rsqrt> : kind_of<op_kind::rsqrt> {
  AG_HD float operator()(float x) const { return 1.0f / ::sqrtf(x); }
};
template <>
struct fn<op_kind::tanh> : kind_of<op_kind::tanh> {
  AG_HD float operator()(float x) const { return ::tanhf(x); }
};
template <>
struct fn<op_kind::sigmoid> : kind_of<op_kind::sigmoid> {
  AG_HD float operator()(float x) const { return 1.0f / (1.0f + ::expf(-x)); }
};
template <>
struct fn<op_kind::silu> : kind_of<op_kind::silu> {
  AG_HD float operator()(float x) const { return x / (1.0f + ::expf(-x)); }
};
// k = 0: x * Phi(x), Phi through erfc; k = 1: PyTorch's tanh approximation, 0.5 (1 + tanh(u))
// written as 1 / (1 + exp(-2u)). Both forms keep their precision where Phi is tiny (1 + erf and
// 1 + tanh would cancel there, and each math library's last bit would decide the result).
template <>
struct fn<op_kind::gelu> : kind_of<op_kind::gelu> {
  uint64_t k = 0;
  AG_HD explicit fn(uint64_t approximate = 0) : k(approximate) {}
  AG_HD float operator()(float x) const {
    if (k == 0)
      return 0.5f * x * ::erfcf(x * -0.70710678118654752f);
    const float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x / (1.0f + ::expf(-2.0f * u));
  }
};

// Whether fn<K> has an integer form (variables, not functions: device code reads them too).
template <op_kind K>
inline constexpr bool takes_integers =
  !(K == op_kind::div || K == op_kind::pow || K == op_kind::exp || K == op_kind::log
    || K == op_kind::sqrt || K == op_kind::rsqrt || K == op_kind::tanh || K == op_kind::sigmoid
    || K == op_kind::silu || K == op_kind::gelu);

template <op_kind K>
inline constexpr bool is_comparison = K == op_kind::eq || K == op_kind::ne || K == op_kind::lt
                                      || K == op_kind::le || K == op_kind::gt || K == op_kind::ge;

template <dtype T>
inline constexpr bool floating = T == dtype::float32 || T == dtype::float16
                                 || T == dtype::bfloat16;

// The compute type of a dtype's values: float, or int64_t for the integer dtypes.
template <dtype T>
using compute_t = std::conditional_t<floating<T>, float, int64_t>;

// A value of compute type C converted to the compute type of dtype To: floating to integer
// rounds toward zero, saturates at To's range and makes NaN 0; integer to floating rounds to
// nearest; integer to integer keeps the value (the store then wraps it to To's width).
template <dtype To, class C>
AG_HD compute_t<To> convert(C x) {
  if constexpr (floating<To>) {
    return static_cast<float>(x);
  } else if constexpr (std::is_same_v<C, float>) {
    if (is_nan(x))
      return 0;
    constexpr double lo = To == dtype::uint8   ? 0.0
                          : To == dtype::int32 ? -2147483648.0
                                               : -9223372036854775808.0;
    constexpr double hi = To == dtype::uint8   ? 255.0
                          : To == dtype::int32 ? 2147483647.0
                                               : 9223372036854774784.0; // the largest double < 2^63
    const double d = static_cast<double>(x);
    return static_cast<int64_t>(d < lo ? lo : d > hi ? hi : d);
  } else {
    return x;
  }
}

// Calls f(fn<K>{}) for the elementwise kind k of the arithmetic, unary and comparison families;
// false for any other kind.
template <class F>
bool visit_math(op_kind k, uint64_t attribute, F&& f) {
  switch (k) {
#define AG_MATH(K)                                                                                 \
  case op_kind::K: f(fn<op_kind::K>{}); return true;
    AG_MATH(add) AG_MATH(sub) AG_MATH(mul) AG_MATH(div) AG_MATH(maximum) AG_MATH(minimum)
    AG_MATH(pow) AG_MATH(eq) AG_MATH(ne) AG_MATH(lt) AG_MATH(le) AG_MATH(gt) AG_MATH(ge)
    AG_MATH(neg) AG_MATH(abs) AG_MATH(relu) AG_MATH(exp) AG_MATH(log) AG_MATH(sqrt) AG_MATH(rsqrt)
    AG_MATH(tanh) AG_MATH(sigmoid) AG_MATH(silu)
#undef AG_MATH
    case op_kind::gelu: f(fn<op_kind::gelu>(attribute)); return true;
    default: return false;
  }
}

// Calls f(std::integral_constant<dtype, T>{}) for the dtype t (a valid one).
template <class F>
void visit_dtype(dtype t, F&& f) {
  switch (t) {
    case dtype::float32: return f(std::integral_constant<dtype, dtype::float32>{});
    case dtype::float16: return f(std::integral_constant<dtype, dtype::float16>{});
    case dtype::bfloat16: return f(std::integral_constant<dtype, dtype::bfloat16>{});
    case dtype::int32: return f(std::integral_constant<dtype, dtype::int32>{});
    case dtype::int64: return f(std::integral_constant<dtype, dtype::int64>{});
    case dtype::uint8: return f(std::integral_constant<dtype, dtype::uint8>{});
  }
}

} // namespace ag::math
