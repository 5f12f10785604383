// Tests of the CUDA elementwise kernels (cuda/elementwise.cu) against the cpu ones, which
// cpu_elementwise_test.cpp holds to plain loops: every operator of the table on every dtype it
// takes, contiguous, broadcast and strided, with NaN, infinities and sizes that are no multiple
// of a vector width. Arithmetic, comparisons, selections and casts must give the very bits; the
// math library's functions agree within a few units in the last place.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "cuda/cpu_kernels.hpp"
#include "cuda/elementwise_call.hpp"
#include "cuda/kernel_stream.hpp"
#include "graph/op_table.hpp"
#include "tests/helpers/dtype_values.hpp"

namespace {

using ag::dtype;
using ag::op_kind;

std::unique_ptr<ag::kernel_stream> gpu0() {
  REQUIRE(ag::cuda_device_count() > 0);
  return ag::make_cuda_stream(0);
}

// Random bytes of n elements of t: floats of either sign and many magnitudes with NaN and both
// infinities sprinkled in, integers across their range, masks of 0 and 1.
std::vector<char> random_elements(dtype t, std::size_t n, uint64_t seed, bool mask = false) {
  std::mt19937_64 rng{seed};
  std::vector<char> out(n * ag::size_of(t));
  for (std::size_t i = 0; i < n; ++i) {
    char* p = out.data() + i * ag::size_of(t);
    const float f = std::ldexp(static_cast<float>(static_cast<int64_t>(rng() % 2000001) - 1000000)
                                 / 1e6f,
                               static_cast<int>(rng() % 24) - 12);
    const float special[] = {std::nanf(""), INFINITY, -INFINITY, 0.0f, -0.0f};
    const float v = rng() % 50 == 0 ? special[rng() % 5] : f;
    switch (t) {
      case dtype::int32: {
        const auto x = static_cast<int32_t>(rng());
        std::memcpy(p, &x, 4);
        break;
      }
      case dtype::int64: {
        const auto x = static_cast<int64_t>(rng());
        std::memcpy(p, &x, 8);
        break;
      }
      case dtype::uint8: *p = static_cast<char>(mask ? rng() % 2 : rng() % 256); break;
      default: ag::test::put_value(t, p, v); break;
    }
  }
  return out;
}

double as_double(dtype t, const char* p) { return ag::test::get_value(t, p); }

bool library_function(op_kind k) {
  switch (k) {
    case op_kind::pow:
    case op_kind::exp:
    case op_kind::log:
    case op_kind::sqrt:
    case op_kind::rsqrt:
    case op_kind::tanh:
    case op_kind::sigmoid:
    case op_kind::silu:
    case op_kind::gelu: return true;
    default: return false;
  }
}

struct layout_case {
  const char* name;
  std::vector<int64_t> shape;   // out's
  std::vector<int64_t> strides; // a's, b's, c's
  std::size_t a_elements, b_elements, c_elements;
};

// Contiguous (no layout), a bias over rows, a transposed a with a column b, a one-element b.
std::vector<layout_case> layouts(std::size_t n) {
  return {
    {"contiguous", {}, {}, n, n, n},
    {"bias", {37, 29}, {29, 1, 0, 1, 29, 1}, 37 * 29, 29, 37 * 29},
    {"bias in vectors", {37, 64}, {64, 1, 0, 1, 64, 1}, 37 * 64, 64, 37 * 64},
    {"transposed", {29, 37}, {1, 29, 1, 0, 37, 1}, 37 * 29, 29, 37 * 29},
    {"scalar-like", {1031}, {1, 0, 1}, 1031, 1, 1031},
  };
}

void check_same(op_kind k, dtype out_t, const std::vector<char>& got,
                const std::vector<char>& want) {
  REQUIRE(got.size() == want.size());
  const std::size_t size = ag::size_of(out_t);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size() / size; ++i) {
    const char* g = got.data() + i * size;
    const char* w = want.data() + i * size;
    if (std::memcmp(g, w, size) == 0)
      continue;
    if (library_function(k) && ag::is_floating(out_t)) {
      const double x = as_double(out_t, g), y = as_double(out_t, w);
      const double tol = out_t == dtype::float32 ? 4e-6 : out_t == dtype::float16 ? 2e-3 : 1.6e-2;
      if ((std::isnan(x) && std::isnan(y)) || x == y
          || std::fabs(x - y) <= tol * std::max(std::fabs(y), 1e-30))
        continue;
      // Tiny values next to zero: absolute.
      if (std::fabs(x - y) <= 1e-30)
        continue;
    }
    if (ag::is_floating(out_t) && std::isnan(as_double(out_t, g))
        && std::isnan(as_double(out_t, w)))
      continue; // a NaN's payload is each side's own
    if (bad++ < 3)
      FAIL_CHECK("element " << i << " differs: got " << as_double(out_t, g) << ", want "
                            << as_double(out_t, w));
  }
  CHECK(bad == 0);
}

// Runs op on the GPU and on the cpu over the same operands and compares.
void compare(ag::kernel_stream& s, const ag::op_desc& op, const layout_case& l) {
  const auto family = ag::info(op.kind).family;
  const dtype a_t = op.in_type;
  const dtype b_t = family == ag::op_family::select ? op.type : op.in_type;
  const auto a = random_elements(a_t, l.a_elements, 1, family == ag::op_family::select);
  const auto b = random_elements(b_t, l.b_elements, 2);
  const auto c = random_elements(b_t, l.c_elements, 3);
  const bool scalar =
    op.b.id == 0 && (family == ag::op_family::binary || family == ag::op_family::compare);
  std::vector<char> want(op.count * ag::size_of(op.type));
  ag::cpu::elementwise(ag::make_elementwise_call(op, want.data(), a.data(),
                                                 scalar ? nullptr : b.data(), c.data()));
  auto* da = static_cast<char*>(s.allocate(a.size()));
  auto* db = static_cast<char*>(s.allocate(b.size()));
  auto* dc = static_cast<char*>(s.allocate(c.size()));
  auto* dout = static_cast<char*>(s.allocate(want.size()));
  s.copy(da, false, a.data(), true, a.size());
  s.copy(db, false, b.data(), true, b.size());
  s.copy(dc, false, c.data(), true, c.size());
  s.elementwise(ag::make_elementwise_call(op, dout, da, scalar ? nullptr : db, dc));
  std::vector<char> got(want.size());
  s.copy(got.data(), true, dout, false, got.size());
  s.synchronize();
  s.deallocate(da, a.size());
  s.deallocate(db, b.size());
  s.deallocate(dc, c.size());
  s.deallocate(dout, want.size());
  check_same(op.kind, op.type, got, want);
}

} // namespace

TEST_CASE("cuda elementwise operators give the cpu kernels' bits on every dtype and layout",
          "[cuda]") {
  auto s = gpu0();
  const std::size_t n = 100003;
  for (std::size_t k = 0; k < ag::op_kind_count; ++k) {
    const auto kind = static_cast<op_kind>(k);
    if (!ag::is_elementwise(kind))
      continue;
    const auto family = ag::info(kind).family;
    for (std::size_t d = 0; d < ag::dtype_count; ++d) {
      const auto t = static_cast<dtype>(d);
      const bool cast = kind == op_kind::cast;
      if (!cast && !ag::takes(ag::info(kind).dtypes, t))
        continue;
      for (const auto& l : layouts(n)) {
        for (std::size_t to = 0; to < (cast ? ag::dtype_count : 1); ++to) {
          ag::op_desc op;
          op.kind = kind;
          op.in_type = family == ag::op_family::select ? dtype::uint8 : t;
          op.type = cast                                ? static_cast<dtype>(to)
                    : family == ag::op_family::compare  ? dtype::uint8
                                                        : t;
          op.b.id = 1; // an operand, not the scalar
          op.scalar = 0.75;
          op.k = kind == op_kind::gelu ? d % 2 : 0;
          if (kind == op_kind::pow)
            op.b.id = 0; // pow's exponent is its scalar
          op.layout.shape = l.shape;
          op.layout.strides = l.strides;
          uint64_t count = 1;
          for (auto x : l.shape)
            count *= static_cast<uint64_t>(x);
          op.count = l.shape.empty() ? n : count;
          INFO(ag::to_string(kind) << " " << ag::to_string(op.in_type) << " -> "
                                   << ag::to_string(op.type) << ", " << l.name);
          compare(*s, op, l);
        }
      }
    }
  }
}

TEST_CASE("cuda binary operators take a scalar on either side as the cpu ones do", "[cuda]") {
  auto s = gpu0();
  const layout_case l{"contiguous", {}, {}, 4099, 4099, 4099};
  for (op_kind kind : {op_kind::sub, op_kind::div, op_kind::maximum, op_kind::lt}) {
    for (dtype t : {dtype::float32, dtype::bfloat16, dtype::int64}) {
      if (!ag::takes(ag::info(kind).dtypes, t))
        continue;
      for (uint64_t first : {0u, 1u}) {
        ag::op_desc op;
        op.kind = kind;
        op.in_type = t;
        op.type = ag::info(kind).family == ag::op_family::compare ? dtype::uint8 : t;
        op.count = 4099;
        op.scalar = -3.0;
        op.k = first;
        INFO(ag::to_string(kind) << " " << ag::to_string(t) << (first ? ", scalar first" : ""));
        compare(*s, op, l);
      }
    }
  }
}

TEST_CASE("cuda fill writes the cpu fill's bits for every dtype", "[cuda]") {
  auto s = gpu0();
  for (std::size_t d = 0; d < ag::dtype_count; ++d) {
    const auto t = static_cast<dtype>(d);
    for (double v : {1.0 / 3.0, -2.5, 1e300, std::nan("")}) {
      const std::size_t n = 1000003;
      std::vector<char> want(n * ag::size_of(t)), got(want.size());
      ag::cpu::fill(t, want.data(), n, v);
      void* p = s->allocate(want.size());
      s->fill(t, p, n, v);
      s->copy(got.data(), true, p, false, got.size());
      s->synchronize();
      s->deallocate(p, want.size());
      INFO(ag::to_string(t) << " " << v);
      CHECK(got == want);
    }
  }
}
