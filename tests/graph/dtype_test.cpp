// The element types (include/actorgraph/dtype.hpp): names, sizes, and the 16-bit floating value
// types against a reference written here from the formats' definitions, in double: each
// format's positive bit patterns are ordered as their values, so the nearest value is found by
// a binary search and a tie goes to the even pattern.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <type_traits>

#include "actorgraph/dtype.hpp"
#include "actorgraph/error.hpp"

using Catch::Contains;

namespace {

// The positive half of a 16-bit floating format: its exponent and significand widths.
struct format {
  int exponent_bits;
  int significand_bits;

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  uint16_t infinity() const {
    return static_cast<uint16_t>(((1u << exponent_bits) - 1) << significand_bits);
  }
  // The value of a positive pattern, as if the exponent went on past the largest finite one
  // (the pattern of infinity is then the power of two above the largest finite value).
  double value(uint32_t bits) const {
    const uint32_t e = bits >> significand_bits;
    const uint32_t m = bits & ((1u << significand_bits) - 1);
    if (e == 0)
      return std::ldexp(static_cast<double>(m), 1 - bias() - significand_bits);
    return std::ldexp(static_cast<double>((1u << significand_bits) + m),
                      static_cast<int>(e) - bias() - significand_bits);
  }
  // The pattern nearest |v|, ties to even; infinity() when it rounds past the largest finite.
  uint16_t nearest(double v) const {
    v = std::fabs(v);
    uint32_t lo = 0, hi = infinity(); // value(lo) <= v < value(hi) once v is below value(hi)
    if (v >= value(hi))
      return infinity();
    while (hi - lo > 1) {
      const uint32_t mid = (lo + hi) / 2;
      (value(mid) <= v ? lo : hi) = mid;
    }
    const double below = v - value(lo), above = value(hi) - v;
    if (below < above || (below == above && lo % 2 == 0))
      return static_cast<uint16_t>(lo);
    return static_cast<uint16_t>(hi);
  }
  uint16_t sign_bit() const { return 0x8000; }
};

constexpr format binary16{5, 10};
constexpr format bfloat16_format{8, 7};

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool is_nan_pattern(const format& fmt, uint16_t b) {
  return (b & 0x7fff) > fmt.infinity();
}

// What a conversion of f must give: the nearest pattern with f's sign.
uint16_t expected(const format& fmt, float f) {
  const uint16_t sign = std::signbit(f) ? fmt.sign_bit() : 0;
  return static_cast<uint16_t>(sign | fmt.nearest(static_cast<double>(f)));
}

// Floats at and beside the midpoint between each pair of neighbouring positive patterns (where
// rounding decides), and a fixed stream of random bit patterns.
template <class Check>
void for_hard_floats(const format& fmt, Check check) {
  for (uint32_t b = 0; b < fmt.infinity(); ++b) {
    const double mid = (fmt.value(b) + fmt.value(b + 1)) / 2;
    if (mid > std::numeric_limits<float>::max())
      continue;
    const auto f = static_cast<float>(mid);
    REQUIRE(static_cast<double>(f) == mid); // a midpoint of a narrower format is a float
    for (float g : {f, std::nextafter(f, 0.0f), std::nextafter(f, INFINITY)})
      for (float s : {g, -g})
        check(s);
  }
  std::mt19937 gen{20261202};
  for (int i = 0; i < 200000; ++i)
    check(float_of(static_cast<uint32_t>(gen())));
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, std::numeric_limits<float>::max(),
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()})
    check(f);
}

} // namespace

static_assert(std::is_trivially_copyable_v<ag::half>);
static_assert(std::is_trivially_copyable_v<ag::bfloat16>);
static_assert(sizeof(ag::half) == 2 && sizeof(ag::bfloat16) == 2);
static_assert(ag::dtype_of_v<float> == ag::dtype::float32);
static_assert(ag::dtype_of_v<ag::bfloat16> == ag::dtype::bfloat16);
static_assert(ag::dtype_of_v<uint8_t> == ag::dtype::uint8);

TEST_CASE("every dtype has a name that parses back, a size, and whether it is floating",
          "[dtype]") {
  using ag::dtype;
  const std::pair<dtype, std::size_t> all[] = {{dtype::float32, 4}, {dtype::float16, 2},
                                               {dtype::bfloat16, 2}, {dtype::int32, 4},
                                               {dtype::int64, 8},    {dtype::uint8, 1}};
  CHECK(std::size(all) == ag::dtype_count);
  for (const auto& [t, bytes] : all) {
    CAPTURE(ag::to_string(t));
    CHECK(ag::is_valid(t));
    CHECK(ag::size_of(t) == bytes);
    CHECK(ag::parse_dtype(ag::to_string(t)) == t);
    CHECK(ag::is_floating(t) == (t == dtype::float32 || t == dtype::float16 || t == dtype::bfloat16));
  }
  CHECK(ag::parse_dtype("half") == dtype::float16);
  CHECK(ag::parse_dtype("float") == dtype::float32);
  CHECK(ag::parse_dtype("long") == dtype::int64);
  const auto outside = static_cast<dtype>(ag::dtype_count);
  CHECK_FALSE(ag::is_valid(outside));
  CHECK(ag::size_of(outside) == 0);
  CHECK(std::string{ag::to_string(outside)} == "dtype?");
}

TEST_CASE("an unknown dtype name is an error naming it, escaped, and the names taken", "[dtype]") {
  CHECK_THROWS_WITH(ag::parse_dtype("fp8"), Contains("unknown dtype fp8")
                                                && Contains("float32, float16, bfloat16"));
  CHECK_THROWS_WITH(ag::parse_dtype("Float32"), Contains("unknown dtype Float32"));
  CHECK_THROWS_WITH(ag::parse_dtype("int\n32"), Contains("int\\x0a32"));
  CHECK_THROWS_AS(ag::parse_dtype(""), ag::error);
}

TEST_CASE("every half converts to float exactly and back to the same bits", "[dtype]") {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto h = ag::half::from_bits(static_cast<uint16_t>(b));
    const float f = h;
    CAPTURE(b);
    REQUIRE(std::signbit(f) == ((b & 0x8000) != 0));
    if (is_nan_pattern(binary16, static_cast<uint16_t>(b))) {
      REQUIRE(std::isnan(f));
      REQUIRE(is_nan_pattern(binary16, ag::half{f}.bits));
      continue;
    }
    const double magnitude = (b & 0x7fff) == binary16.infinity()
                               ? INFINITY
                               : binary16.value(b & 0x7fff);
    REQUIRE(std::fabs(static_cast<double>(f)) == magnitude);
    REQUIRE(ag::half{f}.bits == b);
  }
}

TEST_CASE("every bfloat16 converts to float exactly and back to the same bits", "[dtype]") {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const auto v = ag::bfloat16::from_bits(static_cast<uint16_t>(b));
    const float f = v;
    CAPTURE(b);
    REQUIRE(bits_of(f) == b << 16); // the upper half of a float, by definition
    if (is_nan_pattern(bfloat16_format, static_cast<uint16_t>(b))) {
      REQUIRE(std::isnan(f));
      REQUIRE(is_nan_pattern(bfloat16_format, ag::bfloat16{f}.bits));
      continue;
    }
    const double magnitude = (b & 0x7fff) == bfloat16_format.infinity()
                               ? INFINITY
                               : bfloat16_format.value(b & 0x7fff);
    REQUIRE(std::fabs(static_cast<double>(f)) == magnitude);
    REQUIRE(ag::bfloat16{f}.bits == b);
  }
}

TEST_CASE("a float converts to the nearest half, ties to even, overflowing to infinity",
          "[dtype]") {
  for_hard_floats(binary16, [](float f) {
    const uint16_t got = ag::half{f}.bits;
    CAPTURE(f, bits_of(f), got);
    if (std::isnan(f)) {
      REQUIRE(is_nan_pattern(binary16, got));
      REQUIRE(((got & 0x8000) != 0) == std::signbit(f));
      return;
    }
    REQUIRE(got == expected(binary16, f));
#if defined(__FLT16_MAX__) // the compiler's own conversion agrees
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t theirs;
    std::memcpy(&theirs, &h, sizeof theirs);
    REQUIRE(got == theirs);
#endif
  });
  CHECK(ag::half{65504.0f}.bits == 0x7bff);
  CHECK(ag::half{65519.996f}.bits == 0x7bff);
  CHECK(ag::half{65520.0f}.bits == 0x7c00);
  CHECK(ag::half{5.9604645e-8f}.bits == 0x0001);   // the smallest subnormal
  CHECK(ag::half{2.9802322e-8f}.bits == 0x0000);   // half of it: a tie, to even (zero)
  CHECK(ag::half{-1.0f}.bits == 0xbc00);
}

TEST_CASE("a float converts to the nearest bfloat16, ties to even, overflowing to infinity",
          "[dtype]") {
  for_hard_floats(bfloat16_format, [](float f) {
    const uint16_t got = ag::bfloat16{f}.bits;
    CAPTURE(f, bits_of(f), got);
    if (std::isnan(f)) {
      REQUIRE(is_nan_pattern(bfloat16_format, got));
      REQUIRE(((got & 0x8000) != 0) == std::signbit(f));
      return;
    }
    REQUIRE(got == expected(bfloat16_format, f));
  });
  CHECK(ag::bfloat16{1.0f}.bits == 0x3f80);
  CHECK(ag::bfloat16{float_of(0x3f808000)}.bits == 0x3f80); // a tie, to even
  CHECK(ag::bfloat16{float_of(0x3f818000)}.bits == 0x3f82);
  CHECK(ag::bfloat16{std::numeric_limits<float>::max()}.bits == 0x7f80);
  CHECK(ag::bfloat16{float_of(0x7fc00001)}.bits == 0x7fc0); // a NaN stays one
  CHECK(ag::bfloat16{float_of(0x7f800001)}.bits == 0x7fc0); // quieted
}
