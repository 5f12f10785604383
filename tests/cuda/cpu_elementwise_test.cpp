// Tests of the cpu elementwise kernels (cuda/cpu_elementwise.cpp) and of the calls they run
// (cuda/elementwise_call.cpp): every operator of the table on every dtype it takes, against plain
// loops in double precision written here, with broadcasts, views, scalars, NaN and infinities.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cuda/cpu_kernels.hpp"
#include "cuda/elementwise_call.hpp"
#include "graph/op_table.hpp"
#include "tests/helpers/dtype_values.hpp"

namespace {

using ag::dtype;
using ag::op_kind;

const double nan_v = std::numeric_limits<double>::quiet_NaN();
const double inf_v = std::numeric_limits<double>::infinity();

// Values as a dtype's bytes, and back (as doubles).
std::vector<char> to_bytes(dtype t, const std::vector<double>& v) {
  std::vector<char> out(v.size() * ag::size_of(t));
  for (std::size_t i = 0; i < v.size(); ++i)
    ag::test::put_value(t, out.data() + i * ag::size_of(t), v[i]);
  return out;
}

std::vector<double> from_bytes(dtype t, const std::vector<char>& b) {
  std::vector<double> out(b.size() / ag::size_of(t));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = ag::test::get_value(t, b.data() + i * ag::size_of(t));
  return out;
}

// Values a dtype holds exactly: for floating dtypes, numbers of a few significant bits, with NaN,
// both infinities, both zeros; for integers, small ones of both signs (uint8: 0 to 255).
std::vector<double> sample(dtype t, std::size_t n, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::vector<double> v(n);
  for (auto& x : v) {
    if (ag::is_floating(t))
      x = static_cast<double>(static_cast<int>(rng() % 2001) - 1000) / 64.0;
    else if (t == dtype::uint8)
      x = static_cast<double>(rng() % 256);
    else
      x = static_cast<double>(static_cast<int>(rng() % 2001) - 1000);
  }
  if (ag::is_floating(t) && n >= 8) {
    v[1] = nan_v;
    v[2] = inf_v;
    v[3] = -inf_v;
    v[4] = 0.0;
    v[5] = -0.0;
  }
  return v;
}

// The reference: what the operator means, in double, on values already of the dtype.
double reference(op_kind k, double x, double y, double c, uint64_t attr) {
  switch (k) {
    case op_kind::add: return x + y;
    case op_kind::sub: return x - y;
    case op_kind::mul: return x * y;
    case op_kind::div: return x / y;
    case op_kind::maximum: return std::isnan(x) || std::isnan(y) ? nan_v : std::max(x, y);
    case op_kind::minimum: return std::isnan(x) || std::isnan(y) ? nan_v : std::min(x, y);
    case op_kind::pow: return std::pow(x, y);
    case op_kind::eq: return x == y;
    case op_kind::ne: return x != y;
    case op_kind::lt: return x < y;
    case op_kind::le: return x <= y;
    case op_kind::gt: return x > y;
    case op_kind::ge: return x >= y;
    case op_kind::where: return x != 0 ? y : c;
    case op_kind::neg: return -x;
    case op_kind::abs: return std::fabs(x);
    case op_kind::relu: return std::isnan(x) ? x : x > 0 ? x : 0.0;
    case op_kind::exp: return std::exp(x);
    case op_kind::log: return std::log(x);
    case op_kind::sqrt: return std::sqrt(x);
    case op_kind::rsqrt: return 1.0 / std::sqrt(x);
    case op_kind::tanh: return std::tanh(x);
    case op_kind::sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case op_kind::silu: return x / (1.0 + std::exp(-x));
    case op_kind::gelu:
      return attr == 0 ? 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)))
                       : 0.5 * x
                           * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    default: return nan_v;
  }
}

// The reference rounded to t's values (integers wrap to t's width, as the kernels' do).
double in_dtype(dtype t, double x) {
  if (ag::is_floating(t))
    return from_bytes(t, to_bytes(t, {x}))[0];
  if (t == dtype::uint8)
    return static_cast<uint8_t>(static_cast<int64_t>(x));
  if (t == dtype::int32)
    return static_cast<int32_t>(static_cast<int64_t>(x));
  return x;
}

bool close(double got, double want, dtype t, bool exact) {
  if (std::isnan(want))
    return std::isnan(got);
  if (std::isinf(want) || exact)
    return got == want;
  const double tol = t == dtype::float32 ? 2e-6 : t == dtype::float16 ? 2e-3 : 1.6e-2;
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

// Whether op k's cpu result must equal the reference rounded once: + - * / compare select exactly
// (one IEEE operation of floats that hold the operands exactly), the library functions within a
// tolerance.
bool exact(op_kind k) {
  switch (k) {
    case op_kind::pow:
    case op_kind::exp:
    case op_kind::log:
    case op_kind::sqrt:
    case op_kind::rsqrt:
    case op_kind::tanh:
    case op_kind::sigmoid:
    case op_kind::silu:
    case op_kind::gelu: return false;
    default: return true;
  }
}

struct run_result {
  std::vector<double> out;
  std::vector<double> want;
};

// Runs k over contiguous operands of n elements of t (b a scalar when scalar is given).
run_result run(op_kind k, dtype t, std::size_t n, uint64_t attr = 0, const double* scalar = nullptr,
               bool scalar_first = false) {
  const auto family = ag::info(k).family;
  const dtype out_t = family == ag::op_family::compare ? dtype::uint8 : t;
  auto a = sample(family == ag::op_family::select ? dtype::uint8 : t, n, 1);
  auto b = sample(t, n, 2);
  auto c = sample(t, n, 3);
  if (family == ag::op_family::select)
    for (auto& x : a)
      x = static_cast<double>(static_cast<int64_t>(x) % 2);
  if (k == op_kind::div && !ag::is_floating(t))
    return {};
  auto ab = to_bytes(family == ag::op_family::select ? dtype::uint8 : t, a);
  auto bb = to_bytes(t, b);
  auto cb = to_bytes(t, c);
  std::vector<char> out(n * ag::size_of(out_t) + 1, 0x5a);
  ag::op_desc op;
  op.kind = k;
  op.type = out_t;
  op.in_type = family == ag::op_family::select ? dtype::uint8 : t;
  op.count = n;
  op.k = scalar ? (scalar_first ? 1 : 0) : attr;
  if (scalar)
    op.scalar = *scalar;
  ag::cpu::elementwise(ag::make_elementwise_call(op, out.data(), ab.data(),
                                                 scalar ? nullptr : bb.data(), cb.data()));
  REQUIRE(out.back() == 0x5a); // nothing written past the result
  out.pop_back();
  run_result r;
  r.out = from_bytes(out_t, out);
  for (std::size_t i = 0; i < n; ++i) {
    double x = a[i], y = scalar ? *scalar : b[i];
    if (scalar && scalar_first)
      std::swap(x, y);
    if (ag::is_floating(t) && family != ag::op_family::select) {
      x = in_dtype(t, x);
      y = in_dtype(t, y);
    }
    double want = reference(k, x, y, c[i], attr);
    if (!ag::is_floating(t) && (k == op_kind::neg || k == op_kind::sub || k == op_kind::add))
      want = static_cast<double>(static_cast<int64_t>(want));
    r.want.push_back(in_dtype(out_t, want));
  }
  return r;
}

} // namespace

TEST_CASE("every elementwise operator on every dtype it takes matches a plain loop in double",
          "[cuda-ref]") {
  for (std::size_t k = 0; k < ag::op_kind_count; ++k) {
    const auto kind = static_cast<op_kind>(k);
    if (!ag::is_elementwise(kind) || kind == op_kind::cast || kind == op_kind::clone
        || kind == op_kind::pow)
      continue;
    for (std::size_t d = 0; d < ag::dtype_count; ++d) {
      const auto t = static_cast<dtype>(d);
      if (!ag::takes(ag::info(kind).dtypes, t))
        continue;
      for (uint64_t attr : {0u, 1u}) {
        if (attr == 1 && kind != op_kind::gelu)
          continue;
        INFO(ag::to_string(kind) << " on " << ag::to_string(t) << ", k " << attr);
        const std::size_t n = 1027; // not a multiple of any vector width
        const auto r = run(kind, t, n, attr);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i)
          if (!close(r.out[i], r.want[i], t, exact(kind)) && bad++ < 3)
            FAIL_CHECK("element " << i << ": got " << r.out[i] << ", want " << r.want[i]);
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("a scalar operand stands on either side, and pow takes its exponent", "[cuda-ref]") {
  for (dtype t : {dtype::float32, dtype::float16, dtype::bfloat16, dtype::int32}) {
    for (op_kind k : {op_kind::sub, op_kind::div, op_kind::maximum, op_kind::lt}) {
      if (k == op_kind::div && t == dtype::int32)
        continue;
      for (bool first : {false, true}) {
        INFO(ag::to_string(k) << " on " << ag::to_string(t) << (first ? ", scalar first" : ""));
        const double s = 3.0;
        const auto r = run(k, t, 100, 0, &s, first);
        for (std::size_t i = 0; i < 100; ++i)
          CHECK(close(r.out[i], r.want[i], t, true));
      }
    }
  }
  const double e = 2.0;
  const auto r = run(op_kind::pow, dtype::float32, 100, 0, &e);
  for (std::size_t i = 0; i < 100; ++i)
    CHECK(close(r.out[i], r.want[i], dtype::float32, false));
}

TEST_CASE("casts round floats to nearest, truncate to integers, saturate and make NaN 0",
          "[cuda-ref]") {
  const std::vector<double> in{1.5, -1.5, 2.7, -2.7, 1e10, -1e10, nan_v, inf_v, 300.0, -3.0,
                               65504.0, 70000.0, 1.0 / 3.0};
  auto cast = [&](dtype from, dtype to) {
    auto bytes = to_bytes(from, in);
    std::vector<char> out(in.size() * ag::size_of(to));
    ag::op_desc op;
    op.kind = op_kind::cast;
    op.type = to;
    op.in_type = from;
    op.count = in.size();
    ag::cpu::elementwise(ag::make_elementwise_call(op, out.data(), bytes.data(), nullptr, nullptr));
    return from_bytes(to, out);
  };
  const auto i32 = cast(dtype::float32, dtype::int32);
  CHECK(i32 == std::vector<double>{1, -1, 2, -2, 2147483647, -2147483648.0, 0, 2147483647, 300,
                                   -3, 65504, 70000, 0});
  const auto u8 = cast(dtype::float32, dtype::uint8);
  CHECK(u8 == std::vector<double>{1, 0, 2, 0, 255, 0, 0, 255, 255, 0, 255, 255, 0});
  const auto h = cast(dtype::float32, dtype::float16);
  CHECK(h[11] == inf_v); // past float16's largest finite value
  CHECK(h[10] == 65504.0);
  CHECK(h[12] == static_cast<float>(ag::half(1.0f / 3.0f)));
  CHECK(std::isnan(h[6]));
  // Integer to integer wraps at the narrower width, as PyTorch's does.
  const std::vector<double> big{300.0, -1.0, 70000.0};
  auto bytes = to_bytes(dtype::int64, big);
  std::vector<char> out(3);
  ag::op_desc op;
  op.kind = op_kind::cast;
  op.type = dtype::uint8;
  op.in_type = dtype::int64;
  op.count = 3;
  ag::cpu::elementwise(ag::make_elementwise_call(op, out.data(), bytes.data(), nullptr, nullptr));
  CHECK(from_bytes(dtype::uint8, out) == std::vector<double>{44, 255, 112});
}

TEST_CASE("a broadcast over strided views reads every operand where the layout says",
          "[cuda-ref]") {
  // out[i, j, l] = a[i, l] (a transposed view of a [5, 3] array) + b[j] (broadcast), over
  // [3, 4, 5].
  std::vector<float> a(15), b(4);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i) * 1.5f;
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = 100.0f * static_cast<float>(i + 1);
  ag::op_desc op;
  op.kind = op_kind::add;
  op.count = 60;
  op.layout.shape = {3, 4, 5};
  op.layout.strides = {1, 0, 3, /* b */ 0, 1, 0, /* c */ 0, 0, 0};
  std::vector<float> out(60);
  const auto call = ag::make_elementwise_call(op, out.data(), a.data(), b.data(), nullptr);
  CHECK(call.rank == 3);
  ag::cpu::elementwise(call);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 5; ++l)
        CHECK(out[static_cast<std::size_t>((i * 4 + j) * 5 + l)]
              == a[static_cast<std::size_t>(l * 3 + i)] + b[static_cast<std::size_t>(j)]);
}

TEST_CASE("a call merges the dimensions every operand reads as one, and drops those of size 1",
          "[cuda-ref]") {
  float any = 0; // the operands' memory: only whether b is there matters here
  ag::op_desc op;
  op.kind = op_kind::add;
  op.count = 24;
  // Both operands contiguous over [2, 3, 4], with a leading 1: one run.
  op.layout.shape = {1, 2, 3, 4};
  op.layout.strides = {24, 12, 4, 1, 24, 12, 4, 1, 0, 0, 0, 0};
  CHECK(ag::make_elementwise_call(op, &any, &any, &any, nullptr).rank == 0);
  // A bias over the last dimension: rows merge, the broadcast stays.
  op.layout.strides = {24, 12, 4, 1, 0, 0, 0, 1, 0, 0, 0, 0};
  auto call = ag::make_elementwise_call(op, &any, &any, &any, nullptr);
  REQUIRE(call.rank == 2);
  CHECK(call.shape[0] == 6);
  CHECK(call.shape[1] == 4);
  CHECK(call.strides[0][0] == 4);
  CHECK(call.strides[1][0] == 0);
  CHECK(call.strides[1][1] == 1);
  // A scalar b (none given): contiguous a is one run whatever b's strides say.
  op.layout.strides = {24, 12, 4, 1, 0, 0, 0, 7, 0, 0, 0, 0};
  CHECK(ag::make_elementwise_call(op, &any, &any, nullptr, nullptr).rank == 0);
  // No elements: nothing to merge.
  op.count = 0;
  op.layout.shape = {2, 0, 4};
  op.layout.strides = std::vector<int64_t>(9, 1);
  CHECK(ag::make_elementwise_call(op, &any, &any, &any, nullptr).rank == 0);
}

TEST_CASE("fill writes a dtype's bits of its value, whole numbers saturating for integers",
          "[cuda-ref]") {
  CHECK(ag::fill_bits(dtype::float32, 1.0) == 0x3f800000u);
  CHECK(ag::fill_bits(dtype::float16, 1.0) == 0x3c00u);
  CHECK(ag::fill_bits(dtype::bfloat16, -2.0) == 0xc000u);
  CHECK(ag::fill_bits(dtype::int32, -1.0) == 0xffffffffu);
  CHECK(ag::fill_bits(dtype::int64, 1e300) == 0x7ffffffffffffc00u);
  CHECK(ag::fill_bits(dtype::uint8, 300.0) == 255u);
  CHECK(ag::fill_bits(dtype::uint8, nan_v) == 0u);
  std::vector<int16_t> h(5, 7);
  ag::cpu::fill(dtype::bfloat16, h.data(), 4, 0.5);
  CHECK(h == std::vector<int16_t>{0x3f00, 0x3f00, 0x3f00, 0x3f00, 7});
  ag::cpu::fill(dtype::bfloat16, h.data(), 0, 1.0); // touches nothing
  CHECK(h[0] == 0x3f00);
}
