// The tensor API of dtypes, views and elementwise operators end to end, on cpu and sim devices in
// both modes: values of every dtype come back exactly, broadcasts, scalars and views give what
// plain loops here give, both modes give the same bits, and every bad call is an ag::error that
// names the operator and its operands.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

namespace {

using Catch::Contains;
using ag::dtype;
using ag::shape_t;

std::vector<float> iota(std::size_t n, float start, float step) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = start + step * static_cast<float>(i);
  return v;
}

std::vector<ag::device> places() {
  return {ag::device::cpu(), ag::device::sim(0), ag::device::sim(1)};
}

} // namespace

TEST_CASE("values of every dtype go in and come back exactly, and to_vector gives floats",
          "[ops]") {
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process)};
    for (auto d : places()) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const std::vector<ag::half> h{ag::half(1.5f), ag::half(-0.0f), ag::half(65504.0f),
                                    ag::half::from_bits(0x7e01)};
      const std::vector<ag::bfloat16> b{ag::bfloat16(3.0f), ag::bfloat16(-1e30f)};
      const std::vector<int32_t> i32{INT32_MIN, -1, 0, INT32_MAX};
      const std::vector<int64_t> i64{INT64_MIN, (int64_t{1} << 53) + 1, INT64_MAX};
      const std::vector<uint8_t> u8{0, 1, 255};
      const auto th = rt.from_vector({2, 2}, h, d);
      const auto tb = rt.from_vector({2}, b, d);
      const auto ti = rt.from_vector({4}, i32, d);
      const auto tl = rt.from_vector({3}, i64, d);
      const auto tu = rt.from_vector({3}, u8, d);
      CHECK(th.dtype() == dtype::float16);
      CHECK(th.str() == "float16[2,2] on " + d.str());
      const auto hb = th.values<ag::half>();
      REQUIRE(hb.size() == 4);
      for (std::size_t i = 0; i < 4; ++i)
        CHECK(hb[i].bits == h[i].bits);
      CHECK(tb.values<ag::bfloat16>()[1].bits == b[1].bits);
      CHECK(ti.values<int32_t>() == i32);
      CHECK(tl.values<int64_t>() == i64);
      CHECK(tu.values<uint8_t>() == u8);
      CHECK(tu.to_vector() == std::vector<float>{0, 1, 255});
      CHECK(th.to_vector()[0] == 1.5f);
      CHECK(std::isnan(th.to_vector()[3]));
      CHECK_THROWS_WITH(ti.values<float>(),
                        Contains("values<float32>") && Contains("int32[4] on " + d.str()));
      const auto raw = std::vector<uint8_t>{1, 0, 0, 0, 2, 0, 0, 0};
      const auto fb = rt.from_bytes({2}, dtype::int32, raw.data(), raw.size(), d);
      CHECK(fb.values<int32_t>() == std::vector<int32_t>{1, 2});
      const auto f = rt.full({3}, -7, d, dtype::int64);
      CHECK(f.values<int64_t>() == std::vector<int64_t>{-7, -7, -7});
    }
  }
}

TEST_CASE("a bias add broadcasts, scalars stand on either side, and both modes agree bit for bit",
          "[ops]") {
  std::vector<std::vector<float>> results[2];
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process)};
    for (auto d : places()) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const auto xv = iota(4 * 3, -1.0f, 0.37f);
      const auto bv = iota(3, 0.5f, 0.25f);
      const auto x = rt.from_vector({4, 3}, xv, d);
      const auto bias = rt.from_vector({3}, bv, d);
      const auto col = rt.from_vector({4, 1}, iota(4, 2.0f, 1.0f), d);
      const auto y = x + bias;
      const auto z = (1.0 - y) * 0.5 / col;
      CHECK(y.shape() == shape_t{4, 3});
      const auto yv = y.to_vector();
      const auto zv = z.to_vector();
      for (std::size_t r = 0; r < 4; ++r)
        for (std::size_t c = 0; c < 3; ++c) {
          const float want = xv[r * 3 + c] + bv[c];
          CHECK(yv[r * 3 + c] == want);
          CHECK(zv[r * 3 + c] == (1.0f - want) * 0.5f / (2.0f + static_cast<float>(r)));
        }
      // bfloat16 computes in float and rounds once.
      const auto yb = (x.astype(dtype::bfloat16) + bias.astype(dtype::bfloat16));
      CHECK(yb.dtype() == dtype::bfloat16);
      const auto ybv = yb.values<ag::bfloat16>();
      for (std::size_t i = 0; i < 12; ++i)
        CHECK(ybv[i].bits
              == ag::bfloat16(float(ag::bfloat16(xv[i])) + float(ag::bfloat16(bv[i % 3]))).bits);
      results[process ? 1 : 0].push_back(zv);
      results[process ? 1 : 0].push_back(ag::exp(ag::gelu(z, "tanh")).to_vector());
    }
  }
  REQUIRE(results[0].size() == results[1].size());
  for (std::size_t i = 0; i < results[0].size(); ++i)
    CHECK(std::memcmp(results[0][i].data(), results[1][i].data(),
                      results[0][i].size() * sizeof(float))
          == 0);
}

TEST_CASE("views read their base's elements without a copy, and a view of a view too",
          "[ops]") {
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process)};
    for (auto d : places()) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const auto v = iota(2 * 3 * 4, 0.0f, 1.0f);
      const auto x = rt.from_vector({2, 3, 4}, v, d);
      rt.sync(); // every operator so far dispatched
      const auto before = rt.stats().operators;
      const auto t = x.transpose(0, 2); // [4, 3, 2]
      const auto p = x.permute({1, 0, 2}); // [3, 2, 4]
      const auto s = x.slice(2, 1, 3);     // [2, 3, 2]
      const auto r = x.reshape({6, -1});   // [6, 4]
      rt.sync();
      CHECK(rt.stats().operators == before); // views are metadata
      CHECK(t.shape() == shape_t{4, 3, 2});
      CHECK_FALSE(t.is_contiguous());
      CHECK(r.is_contiguous());
      CHECK(r.shape() == shape_t{6, 4});
      auto at = [&](std::size_t i, std::size_t j, std::size_t k) { return v[(i * 3 + j) * 4 + k]; };
      const auto tv = t.to_vector();
      const auto pv = p.to_vector();
      const auto sv = s.to_vector();
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 3; ++j)
          for (std::size_t k = 0; k < 4; ++k) {
            CHECK(tv[(k * 3 + j) * 2 + i] == at(i, j, k));
            CHECK(pv[(j * 2 + i) * 4 + k] == at(i, j, k));
            if (k >= 1 && k < 3)
              CHECK(sv[(i * 3 + j) * 2 + (k - 1)] == at(i, j, k));
          }
      CHECK(r.to_vector() == v);
      // A view of a view, used in an operator with a broadcast: one operator, no copy first.
      const auto ss = t.slice(0, 1, 2).slice(2, 1, 2); // [1, 3, 1]: x[1, :, 1]
      rt.sync();
      const auto before_add = rt.stats().operators;
      const auto sum = ss + rt.from_vector({2}, {100.0f, 200.0f}, d); // [1, 3, 2]
      rt.sync();
      // The upload (a copy, but to the cpu) and the add: the views were not copied first.
      CHECK(rt.stats().operators == before_add + (d.is_cpu() ? 1 : 2));
      const auto got = sum.to_vector();
      CHECK(got == std::vector<float>{at(1, 0, 1) + 100, at(1, 0, 1) + 200, at(1, 1, 1) + 100,
                                      at(1, 1, 1) + 200, at(1, 2, 1) + 100, at(1, 2, 1) + 200});
      // Reshaping a view that is not row-major copies first, then views the copy.
      CHECK(t.reshape({-1}).to_vector() == tv);
      CHECK(t.contiguous().is_contiguous());
      CHECK(x.slice(0, 5, 9).numel() == 0);
      CHECK(x.slice(-1, -2, 100).shape() == shape_t{2, 3, 2});
    }
  }
}

TEST_CASE("comparisons give uint8 masks and where picks by them", "[ops]") {
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process, "sim:0")};
    for (auto d : {ag::device::cpu(), ag::device::sim(0)}) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const float nan = std::nanf("");
      const auto x = rt.from_vector({5}, {1.0f, 2.0f, nan, -1.0f, 0.0f}, d);
      const auto y = rt.from_vector({5}, {1.0f, 3.0f, nan, -2.0f, -0.0f}, d);
      CHECK(ag::eq(x, y).values<uint8_t>() == std::vector<uint8_t>{1, 0, 0, 0, 1});
      CHECK(ag::ne(x, y).values<uint8_t>() == std::vector<uint8_t>{0, 1, 1, 1, 0});
      CHECK(ag::lt(x, y).values<uint8_t>() == std::vector<uint8_t>{0, 1, 0, 0, 0});
      CHECK(ag::ge(x, 1.0).values<uint8_t>() == std::vector<uint8_t>{1, 1, 0, 0, 0});
      const auto w = ag::where(ag::gt(x, y), x, y * 10.0);
      const auto wv = w.to_vector();
      CHECK(wv[0] == 10.0f);
      CHECK(wv[1] == 30.0f);
      CHECK(std::isnan(wv[2]));
      CHECK(wv[3] == -1.0f);
      const auto m = ag::maximum(x, y).to_vector();
      CHECK(std::isnan(m[2]));
      CHECK(m[1] == 3.0f);
      const auto i = rt.from_vector({3}, std::vector<int32_t>{-5, 0, 7}, d);
      CHECK((i * 3 - 1).values<int32_t>() == std::vector<int32_t>{-16, -1, 20});
      CHECK(ag::abs(i).values<int32_t>() == std::vector<int32_t>{5, 0, 7});
      CHECK(ag::relu(i).values<int32_t>() == std::vector<int32_t>{0, 0, 7});
      CHECK(i.astype(dtype::float32).to_vector() == std::vector<float>{-5, 0, 7});
    }
  }
}

TEST_CASE("a call that does not fit throws naming the operator, the operands and what is wrong",
          "[ops]") {
  ag::runtime rt{ag::test::sim_options(false, "sim:0")};
  const auto cpu = ag::device::cpu();
  const auto x = rt.from_vector({2, 3}, iota(6, 0, 1), cpu);
  const auto y = rt.from_vector({4}, iota(4, 0, 1), cpu);
  const auto h = x.astype(dtype::float16);
  const auto i = rt.from_vector({2}, std::vector<int32_t>{1, 2}, cpu);
  const auto s = rt.from_vector({3}, iota(3, 0, 1), ag::device::sim(0));
  CHECK_THROWS_WITH(x + y, Contains("add: shape mismatch") && Contains("lhs float32[2,3] on cpu")
                             && Contains("rhs float32[4] on cpu"));
  CHECK_THROWS_WITH(x * h, Contains("mul: dtype mismatch") && Contains("rhs float16[2,3] on cpu"));
  CHECK_THROWS_WITH(x - s, Contains("sub: device mismatch") && Contains("rhs float32[3] on sim:0"));
  CHECK_THROWS_WITH(i / i, Contains("div: takes float32, float16 or bfloat16, got int32[2] on cpu"));
  CHECK_THROWS_WITH(ag::exp(i), Contains("exp: takes float32, float16 or bfloat16"));
  CHECK_THROWS_WITH(i * 0.5, Contains("mul: the scalar 0.5") && Contains("int32[2] on cpu"));
  CHECK_THROWS_WITH(ag::where(x, x, x), Contains("where: the mask must be uint8"));
  CHECK_THROWS_WITH(ag::gelu(x, "fast"), Contains("gelu: approximate must be"));
  CHECK_THROWS_WITH(x.reshape({4, -1}), Contains("reshape"));
  CHECK_THROWS_WITH(x.permute({0, 0}), Contains("permute"));
  CHECK_THROWS_WITH(x.transpose(0, 2), Contains("transpose"));
  CHECK_THROWS_WITH(rt.full({2}, 1.5, cpu, dtype::int32), Contains("not a whole number"));
  CHECK_THROWS_WITH(rt.from_bytes({3}, dtype::int64, nullptr, 8, cpu),
                    Contains("needs 3 values, got 1"));
  CHECK_THROWS_WITH(h.matmul(h), Contains("matmul: shapes do not fit") && Contains("lhs float16[2,3]"));
  CHECK_THROWS_WITH(x.matmul(h), Contains("matmul: dtype mismatch"));
  CHECK_THROWS_WITH(i.matmul(i), Contains("matmul: takes float32, float16 or bfloat16"));
  CHECK_THROWS_WITH(ag::all_reduce({h}), Contains("all_reduce: takes float32"));
}

TEST_CASE("cat joins tensors along any dimension, views and empty ones included", "[ops]") {
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process, "sim:0")};
    for (auto d : {ag::device::cpu(), ag::device::sim(0)}) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const auto a = rt.from_vector({2, 3}, iota(6, 0, 1), d);
      const auto b = rt.from_vector({2, 1}, {10.0f, 11.0f}, d);
      const auto e = rt.from_vector({2, 0}, std::vector<float>{}, d);
      const auto c = ag::cat({a, b, e, a.slice(1, 2, 3), b}, 1); // five: two operators
      CHECK(c.shape() == shape_t{2, 6});
      CHECK(c.to_vector() == std::vector<float>{0, 1, 2, 10, 2, 10, 3, 4, 5, 11, 5, 11});
      const auto rows = ag::cat({a, a * 2.0}, 0);
      CHECK(rows.shape() == shape_t{4, 3});
      CHECK(rows.to_vector() == std::vector<float>{0, 1, 2, 3, 4, 5, 0, 2, 4, 6, 8, 10});
      const auto ints = ag::cat({rt.from_vector({2}, std::vector<int64_t>{1, 2}, d),
                                 rt.from_vector({1}, std::vector<int64_t>{-3}, d)});
      CHECK(ints.values<int64_t>() == std::vector<int64_t>{1, 2, -3});
      CHECK(ag::cat({a}, 0).to_vector() == a.to_vector());
    }
    const auto x = rt.from_vector({2, 3}, iota(6, 0, 1), ag::device::cpu());
    CHECK_THROWS_WITH(ag::cat({x, rt.from_vector({3, 3}, iota(9, 0, 1), ag::device::cpu())}, 1),
                      Contains("cat: tensor 1 of shape [3,3] does not match tensor 0"));
    CHECK_THROWS_WITH(ag::cat({x, x.astype(dtype::float16)}, 0),
                      Contains("cat: tensor 1 (float16[2,3] on cpu) does not match"));
    CHECK_THROWS_WITH(ag::cat({}, 0), Contains("cat: no tensors to join"));
  }
}
