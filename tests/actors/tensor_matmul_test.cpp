// torch.matmul end to end on cpu and sim devices in both modes: plain, transposed views (read in
// place), vectors, broadcast batches, half precision accumulated in float32, against plain loops.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"
#include "tests/helpers/dtype_values.hpp"

namespace {

using Catch::Contains;
using ag::dtype;
using ag::shape_t;

std::vector<float> values(std::size_t n, uint32_t seed) { return ag::test::test_floats(n, seed); }

// out[i, j] = sum_p a(i, p) * b(p, j), with a(i, p) and b(p, j) given as functions.
template <class A, class B>
std::vector<double> product(int64_t m, int64_t k, int64_t n, A a, B b) {
  std::vector<double> out(static_cast<std::size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += a(i, p) * b(p, j);
      out[static_cast<std::size_t>(i * n + j)] = s;
    }
  return out;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (std::fabs(got[i] - want[i]) > tol * std::max(1.0, std::fabs(want[i])))
      FAIL_CHECK("element " << i << ": got " << got[i] << ", want " << want[i]);
}

} // namespace

TEST_CASE("matmul of matrices, transposed views, vectors and broadcast batches matches plain loops",
          "[ops]") {
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process, "sim:0")};
    for (auto d : {ag::device::cpu(), ag::device::sim(0)}) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const int64_t M = 7, K = 5, N = 3;
      const auto av = values(M * K, 1), bv = values(K * N, 2);
      const auto a = rt.from_vector({M, K}, av, d);
      const auto b = rt.from_vector({K, N}, bv, d);
      auto A = [&](int64_t i, int64_t p) { return double(av[static_cast<std::size_t>(i * K + p)]); };
      auto B = [&](int64_t p, int64_t j) { return double(bv[static_cast<std::size_t>(p * N + j)]); };
      check_close(ag::matmul(a, b).to_vector(), product(M, K, N, A, B), 1e-6);
      // a^T read in place: [K, M]^T of a [K, M] array holding a's transpose.
      std::vector<float> at(av.size());
      for (int64_t i = 0; i < M; ++i)
        for (int64_t p = 0; p < K; ++p)
          at[static_cast<std::size_t>(p * M + i)] = av[static_cast<std::size_t>(i * K + p)];
      const auto a_t = rt.from_vector({K, M}, at, d);
      const auto b_t = b.transpose(0, 1).contiguous(); // [N, K]
      rt.sync();
      const auto before = rt.stats().operators;
      const auto c = ag::matmul(a_t.transpose(0, 1), b_t.transpose(1, 0));
      rt.sync();
      CHECK(rt.stats().operators == before + 1); // one operator: no copy of either view
      check_close(c.to_vector(), product(M, K, N, A, B), 1e-6);
      // vectors
      const auto v = rt.from_vector({K}, values(K, 3), d);
      const auto vv = values(K, 3);
      auto V = [&](int64_t p, int64_t) { return double(vv[static_cast<std::size_t>(p)]); };
      CHECK(ag::matmul(a, v).shape() == shape_t{M});
      check_close(ag::matmul(a, v).to_vector(), product(M, K, 1, A, V), 1e-6);
      auto Vr = [&](int64_t, int64_t p) { return double(vv[static_cast<std::size_t>(p)]); };
      CHECK(ag::matmul(v, b).shape() == shape_t{N});
      check_close(ag::matmul(v, b).to_vector(), product(1, K, N, Vr, B), 1e-6);
      CHECK(ag::matmul(v, v).shape() == shape_t{});
      check_close(ag::matmul(v, v).to_vector(), product(1, K, 1, Vr, V), 1e-6);
      // batches: [2, 1, M, K] x [3, K, N] -> [2, 3, M, N]
      const auto xv = values(2 * M * K, 4), yv = values(3 * K * N, 5);
      const auto x = rt.from_vector({2, 1, M, K}, xv, d);
      const auto y = rt.from_vector({3, K, N}, yv, d);
      const auto z = ag::matmul(x, y);
      CHECK(z.shape() == shape_t{2, 3, M, N});
      const auto zv = z.to_vector();
      for (int64_t s = 0; s < 2; ++s)
        for (int64_t t = 0; t < 3; ++t) {
          auto X = [&](int64_t i, int64_t p) {
            return double(xv[static_cast<std::size_t>((s * M + i) * K + p)]);
          };
          auto Y = [&](int64_t p, int64_t j) {
            return double(yv[static_cast<std::size_t>((t * K + p) * N + j)]);
          };
          const auto want = product(M, K, N, X, Y);
          const std::vector<float> got(zv.begin() + (s * 3 + t) * M * N,
                                       zv.begin() + (s * 3 + t + 1) * M * N);
          check_close(got, want, 1e-6);
        }
      // A view whose last two dimensions are neither row- nor column-major (strides 2K and 2)
      // is copied first, and still right.
      const auto qv = values(M * K * 2, 6);
      const auto q = rt.from_vector({M, K, 2}, qv, d).permute({2, 0, 1}); // [2, M, K]
      const auto qb = ag::matmul(q, b).to_vector();
      for (int64_t s2 = 0; s2 < 2; ++s2) {
        auto Q = [&](int64_t i, int64_t p) {
          return double(qv[static_cast<std::size_t>((i * K + p) * 2 + s2)]);
        };
        const std::vector<float> got(qb.begin() + s2 * M * N, qb.begin() + (s2 + 1) * M * N);
        check_close(got, product(M, K, N, Q, B), 1e-6);
      }
    }
  }
}

TEST_CASE("float16 and bfloat16 matmul accumulates in float32 and rounds once", "[ops]") {
  ag::runtime rt{ag::test::sim_options(false, "sim:0")};
  for (dtype t : {dtype::float16, dtype::bfloat16}) {
    for (auto d : {ag::device::cpu(), ag::device::sim(0)}) {
      const int64_t M = 4, K = 300, N = 5;
      const auto a = rt.from_vector({M, K}, values(M * K, 7), d).astype(t);
      const auto b = rt.from_vector({K, N}, values(K * N, 8), d).astype(t);
      const auto av = a.to_vector(), bv = b.to_vector(); // the rounded operands
      const auto c = ag::matmul(a, b);
      CHECK(c.dtype() == t);
      auto A = [&](int64_t i, int64_t p) { return double(av[static_cast<std::size_t>(i * K + p)]); };
      auto B = [&](int64_t p, int64_t j) { return double(bv[static_cast<std::size_t>(p * N + j)]); };
      // float32 accumulation then one rounding to the dtype: within its half-ulp (and float32's
      // error over K products).
      check_close(c.to_vector(), product(M, K, N, A, B), t == dtype::float16 ? 1e-3 : 8e-3);
    }
  }
}
