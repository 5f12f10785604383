// Element types. ag::dtype names what a tensor holds; ag::half and ag::bfloat16 are the host's
// value types of the two 16-bit floating dtypes: IEEE 754 binary16, and bfloat16 (the upper half
// of a float32: its range, 8 bits of significand). Both are trivially copyable 16-bit values that
// convert to float exactly and from float rounding to nearest, ties to even; NaN stays NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace ag {

enum class dtype : uint8_t {
  float32 = 0,
  float16,
  bfloat16,
  int32,
  int64,
  uint8, // masks and the results of comparisons
};

inline constexpr std::size_t dtype_count = 6;

// "float32", "float16", ...; "dtype?" for a value outside the enumeration.
const char* to_string(dtype t) noexcept;

// False for a value outside the enumeration (a byte read from a file or the wire).
constexpr bool is_valid(dtype t) noexcept { return static_cast<std::size_t>(t) < dtype_count; }

// Bytes of one element; 0 for a value outside the enumeration.
constexpr std::size_t size_of(dtype t) noexcept {
  switch (t) {
    case dtype::float32: return 4;
    case dtype::float16: return 2;
    case dtype::bfloat16: return 2;
    case dtype::int32: return 4;
    case dtype::int64: return 8;
    case dtype::uint8: return 1;
  }
  return 0;
}

constexpr bool is_floating(dtype t) noexcept {
  return t == dtype::float32 || t == dtype::float16 || t == dtype::bfloat16;
}

// A dtype by its name as to_string() writes it, or as NumPy and PyTorch spell it ("half" and
// "float16", "float" and "float32", "int" and "int32", "long" and "int64"; case matters). Throws
// ag::error naming the text and the names it takes.
dtype parse_dtype(const std::string& name);

namespace detail {

inline uint32_t bits_of(float f) noexcept {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float float_of(uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// binary16 <- float32, to nearest, ties to even (F. Giesen's float_to_half_fast3_rtne): a NaN keeps
// its sign and the top of its payload, and stays a NaN.
inline uint16_t half_bits_of(float f) noexcept {
  const uint32_t x = bits_of(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) // NaN, quieted
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax == 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (ax >= 0x477ff000u) // 65520 and above round to infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (ax < 0x38800000u) { // below 2^-14: a subnormal or zero; adding 0.5 rounds at 2^-24
    const float r = float_of(ax) + 0.5f;
    return static_cast<uint16_t>(sign | (bits_of(r) - 0x3f000000u));
  }
  const uint32_t odd = (ax >> 13) & 1u;
  ax += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
  return static_cast<uint16_t>(sign | (ax >> 13));
}

inline float float_of_half(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0x1f)
    return float_of(sign | 0x7f800000u | (m << 13));
  if (e == 0) // zero or subnormal: m * 2^-24, exact in float
    return float_of(sign | bits_of(static_cast<float>(m) * 5.9604644775390625e-8f));
  return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

// bfloat16 <- float32, to nearest, ties to even; a NaN is quieted and keeps its sign.
inline uint16_t bfloat16_bits_of(float f) noexcept {
  const uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float float_of_bfloat16(uint16_t b) noexcept {
  return float_of(static_cast<uint32_t>(b) << 16);
}

} // namespace detail

// IEEE 754 binary16 (dtype::float16): 5 exponent bits, 10 of significand, largest finite 65504.
struct half {
  uint16_t bits = 0;

  half() noexcept = default;
  half(float f) noexcept : bits(detail::half_bits_of(f)) {} // NOLINT: converts as float does
  operator float() const noexcept { return detail::float_of_half(bits); }

  static half from_bits(uint16_t b) noexcept {
    half h;
    h.bits = b;
    return h;
  }
};

// bfloat16 (dtype::bfloat16): float32's 8 exponent bits, 7 of significand.
struct bfloat16 {
  uint16_t bits = 0;

  bfloat16() noexcept = default;
  bfloat16(float f) noexcept : bits(detail::bfloat16_bits_of(f)) {} // NOLINT: as float converts
  operator float() const noexcept { return detail::float_of_bfloat16(bits); }

  static bfloat16 from_bits(uint16_t b) noexcept {
    bfloat16 v;
    v.bits = b;
    return v;
  }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);

namespace detail {

template <class T>
inline constexpr bool is_value_type =
  std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>
  || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, uint8_t>;

template <class T>
constexpr dtype dtype_for() noexcept {
  static_assert(is_value_type<T>, "a tensor holds float, ag::half, ag::bfloat16, int32_t, "
                                  "int64_t or uint8_t values");
  if constexpr (std::is_same_v<T, half>)
    return dtype::float16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return dtype::bfloat16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return dtype::int32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return dtype::int64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return dtype::uint8;
  else
    return dtype::float32;
}

} // namespace detail

// The dtype of a host value type: dtype_of_v<float>, dtype_of_v<ag::half>, ... (the types
// from_vector() and values<T>() take).
template <class T>
inline constexpr dtype dtype_of_v = detail::dtype_for<T>();

} // namespace ag
