// Reductions, softmaxes, norms, embedding, cross_entropy and random tensors end to end on cpu and
// sim devices in both modes, against plain loops in double written here; both modes give the
// same bits, and bad calls name what is wrong.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"
#include "tests/helpers/dtype_values.hpp"

namespace {

using Catch::Contains;
using ag::dtype;
using ag::shape_t;

std::vector<float> values(std::size_t n, uint32_t seed) { return ag::test::test_floats(n, seed); }

bool close(double got, double want, double tol = 1e-5) {
  return std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want));
}

} // namespace

TEST_CASE("sums, means, maxima and argmax over any dimensions match plain loops", "[ops]") {
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process, "sim:0")};
    for (auto d : {ag::device::cpu(), ag::device::sim(0)}) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const std::size_t A = 3, B = 4, C = 5;
      const auto v = values(A * B * C, 1);
      const auto x = rt.from_vector({3, 4, 5}, v, d);
      auto at = [&](std::size_t i, std::size_t j, std::size_t k) { return v[(i * B + j) * C + k]; };
      // over dim 1, kept
      const auto s1 = x.sum({1}, true);
      CHECK(s1.shape() == shape_t{3, 1, 5});
      const auto s1v = s1.to_vector();
      for (std::size_t i = 0; i < A; ++i)
        for (std::size_t k = 0; k < C; ++k) {
          double want = 0;
          for (std::size_t j = 0; j < B; ++j)
            want += at(i, j, k);
          CHECK(close(s1v[i * C + k], want));
        }
      // over dims 0 and 2 (not neighbours): two runs
      const auto m02 = x.mean({0, -1});
      CHECK(m02.shape() == shape_t{4});
      const auto m02v = m02.to_vector();
      for (std::size_t j = 0; j < B; ++j) {
        double want = 0;
        for (std::size_t i = 0; i < A; ++i)
          for (std::size_t k = 0; k < C; ++k)
            want += at(i, j, k);
        CHECK(close(m02v[j], want / (A * C)));
      }
      // everything
      double total = 0;
      for (float e : v)
        total += e;
      CHECK(close(x.sum().to_vector()[0], total));
      CHECK(x.astype(dtype::bfloat16).sum().dtype() == dtype::bfloat16);
      CHECK(close(x.mean().to_vector()[0], total / v.size()));
      // max and argmax over the last dimension
      const auto mx = x.max(-1).to_vector();
      const auto am = x.argmax(2).values<int64_t>();
      for (std::size_t i = 0; i < A; ++i)
        for (std::size_t j = 0; j < B; ++j) {
          std::size_t best = 0;
          for (std::size_t k = 1; k < C; ++k)
            if (at(i, j, k) > at(i, j, best))
              best = k;
          CHECK(mx[i * B + j] == at(i, j, best));
          CHECK(am[i * B + j] == static_cast<int64_t>(best));
        }
      CHECK(x.argmax(0, true).shape() == shape_t{1, 4, 5});
      const auto nan_row = rt.from_vector({4}, {1.0f, std::nanf(""), 5.0f, std::nanf("")}, d);
      CHECK(nan_row.argmax(0).values<int64_t>() == std::vector<int64_t>{1});
      CHECK(std::isnan(nan_row.max(0).to_vector()[0]));
    }
  }
}

TEST_CASE("softmax, log_softmax, layer_norm, rms_norm match plain loops and agree across modes",
          "[ops]") {
  std::vector<std::vector<float>> got[2];
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process, "sim:0")};
    for (auto d : {ag::device::cpu(), ag::device::sim(0)}) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const std::size_t R = 6, K = 33;
      const auto v = values(R * K, 2);
      const auto wv = values(K, 3);
      const auto bv = values(K, 4);
      const auto x = rt.from_vector({2, 3, 33}, v, d);
      const auto w = rt.from_vector({33}, wv, d);
      const auto b = rt.from_vector({33}, bv, d);
      const auto sm = ag::softmax(x, -1).to_vector();
      const auto ls = ag::log_softmax(x, 2).to_vector();
      const auto ln = ag::layer_norm(x, w, b, 1e-5).to_vector();
      const auto rn = ag::rms_norm(x, w, 1e-6).to_vector();
      const auto plain = ag::layer_norm(x, ag::tensor{}, ag::tensor{}).to_vector();
      for (std::size_t r = 0; r < R; ++r) {
        double top = -INFINITY, mean = 0, sq = 0;
        for (std::size_t k = 0; k < K; ++k) {
          top = std::max(top, double(v[r * K + k]));
          mean += v[r * K + k];
          sq += double(v[r * K + k]) * v[r * K + k];
        }
        mean /= K;
        double total = 0, var = 0;
        for (std::size_t k = 0; k < K; ++k) {
          total += std::exp(v[r * K + k] - top);
          var += (v[r * K + k] - mean) * (v[r * K + k] - mean);
        }
        var /= K;
        for (std::size_t k = 0; k < K; ++k) {
          const std::size_t e = r * K + k;
          CHECK(close(sm[e], std::exp(v[e] - top) / total));
          CHECK(close(ls[e], v[e] - top - std::log(total)));
          const double norm = (v[e] - mean) / std::sqrt(var + 1e-5);
          CHECK(close(ln[e], norm * wv[k] + bv[k], 1e-4));
          CHECK(close(plain[e], norm, 1e-4));
          CHECK(close(rn[e], v[e] / std::sqrt(sq / K + 1e-6) * wv[k], 1e-4));
        }
      }
      // softmax over a middle dimension: columns of [2, 3, 33] along 3
      const auto mid = ag::softmax(x, 1).to_vector();
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t k = 0; k < K; ++k) {
          double s = 0;
          for (std::size_t j = 0; j < 3; ++j)
            s += mid[(i * 3 + j) * K + k];
          CHECK(close(s, 1.0));
        }
      got[process ? 1 : 0].insert(got[process ? 1 : 0].end(), {sm, ls, ln, rn, mid});
    }
  }
  for (std::size_t i = 0; i < got[0].size(); ++i)
    CHECK(std::memcmp(got[0][i].data(), got[1][i].data(), got[0][i].size() * sizeof(float)) == 0);
}

TEST_CASE("embedding picks rows, cross_entropy is the mean negative log-likelihood", "[ops]") {
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process, "sim:0")};
    for (auto d : {ag::device::cpu(), ag::device::sim(0)}) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const auto tv = values(5 * 3, 5);
      const auto table = rt.from_vector({5, 3}, tv, d);
      const auto idx = rt.from_vector({2, 2}, std::vector<int64_t>{4, 0, 2, 4}, d);
      const auto e = ag::embedding(table, idx);
      CHECK(e.shape() == shape_t{2, 2, 3});
      const auto ev = e.to_vector();
      const int64_t rows[] = {4, 0, 2, 4};
      for (std::size_t r = 0; r < 4; ++r)
        for (std::size_t k = 0; k < 3; ++k)
          CHECK(ev[r * 3 + k] == tv[static_cast<std::size_t>(rows[r]) * 3 + k]);

      const auto lv = values(4 * 6, 6);
      const auto logits = rt.from_vector({4, 6}, lv, d);
      const auto targets = rt.from_vector({4}, std::vector<int32_t>{0, 5, 2, 2}, d);
      const auto loss = ag::cross_entropy(logits, targets);
      CHECK(loss.shape() == shape_t{});
      double want = 0;
      const int t[] = {0, 5, 2, 2};
      for (std::size_t r = 0; r < 4; ++r) {
        double top = -INFINITY, total = 0;
        for (std::size_t c = 0; c < 6; ++c)
          top = std::max(top, double(lv[r * 6 + c]));
        for (std::size_t c = 0; c < 6; ++c)
          total += std::exp(lv[r * 6 + c] - top);
        want -= lv[r * 6 + static_cast<std::size_t>(t[r])] - top - std::log(total);
      }
      CHECK(close(loss.to_vector()[0], want / 4));
    }
  }
}

TEST_CASE("an index out of range fails its operator naming the index, and its device with it",
          "[ops]") {
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process, "sim:0")};
    const auto d = ag::device::sim(0);
    const auto table = rt.from_vector({5, 3}, values(15, 5), d);
    const auto bad = rt.from_vector({1}, std::vector<int32_t>{5}, d);
    CHECK_THROWS_WITH(ag::embedding(table, bad).to_vector(),
                      Contains("embedding") && Contains("index 5") && Contains("out of range"));
    // As a failed kernel does on a GPU, it fails what its device runs after it.
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:0"));
    CHECK_THROWS(table.to_vector());
  }
}

TEST_CASE("random tensors are the same bits on every device and in either mode", "[ops]") {
  std::vector<float> first;
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process, "sim:0")};
    for (auto d : {ag::device::cpu(), ag::device::sim(0)}) {
      const auto u = rt.uniform({1000}, -2.0, 3.0, 42, d).to_vector();
      const auto n = rt.normal({1000}, 1.0, 0.5, 42, d).to_vector();
      for (float x : u)
        CHECK((x >= -2.0f && x < 3.0f));
      double mean = 0;
      for (float x : n)
        mean += x;
      CHECK(std::fabs(mean / 1000 - 1.0) < 0.1);
      std::vector<float> both = u;
      both.insert(both.end(), n.begin(), n.end());
      if (first.empty())
        first = both;
      else
        CHECK(std::memcmp(first.data(), both.data(), first.size() * sizeof(float)) == 0);
      CHECK(rt.uniform({3}, 0, 1, 7, d, dtype::bfloat16).dtype() == dtype::bfloat16);
      CHECK(rt.uniform({64}, 0, 1, 7, d).to_vector() != rt.uniform({64}, 0, 1, 8, d).to_vector());
    }
    CHECK_THROWS_WITH(rt.uniform({2}, 1, 1, 0, ag::device::cpu()), Contains("must be below"));
    CHECK_THROWS_WITH(rt.normal({2}, 0, 1, 0, ag::device::cpu(), dtype::int32),
                      Contains("normal: takes float32"));
  }
}

TEST_CASE("reductions and network operators refuse what does not fit, naming it", "[ops]") {
  ag::runtime rt{ag::test::sim_options(false, "sim:0")};
  const auto cpu = ag::device::cpu();
  const auto x = rt.from_vector({2, 3}, values(6, 7), cpu);
  const auto i = rt.from_vector({2}, std::vector<int32_t>{0, 1}, cpu);
  CHECK_THROWS_WITH(i.sum({0}), Contains("sum: takes float32, float16 or bfloat16, got int32[2]"));
  CHECK_THROWS_WITH(x.mean({2}), Contains("mean"));
  CHECK_THROWS_WITH(ag::softmax(x, 3), Contains("softmax"));
  CHECK_THROWS_WITH(ag::layer_norm(x, x, ag::tensor{}),
                    Contains("layer_norm: weight must be float32[3] on cpu, got float32[2,3]"));
  CHECK_THROWS_WITH(ag::embedding(x, x), Contains("embedding: indices must be int32 or int64"));
  CHECK_THROWS_WITH(ag::cross_entropy(x, rt.from_vector({3}, std::vector<int32_t>{0, 1, 2}, cpu)),
                    Contains("cross_entropy: logits [N, C] and targets [N]"));
}

TEST_CASE("operators on empty and one-element tensors give empty and one-element results",
          "[ops]") {
  for (bool process : {false, true}) {
    ag::runtime rt{ag::test::sim_options(process, "sim:0")};
    for (auto d : {ag::device::cpu(), ag::device::sim(0)}) {
      INFO((process ? "process" : "thread") << " mode, " << d.str());
      const auto empty = rt.from_vector({0, 4}, std::vector<float>{}, d);
      CHECK((empty + rt.full({4}, 1.0, d)).to_vector().empty());
      CHECK(ag::softmax(empty, -1).shape() == shape_t{0, 4});
      CHECK(ag::softmax(empty, -1).to_vector().empty());
      CHECK(empty.sum({0}).to_vector() == std::vector<float>{0, 0, 0, 0});
      CHECK(ag::matmul(rt.full({3, 0}, 1.0, d), rt.full({0, 2}, 1.0, d)).to_vector()
            == std::vector<float>(6, 0.0f)); // an empty inner product is 0
      CHECK(ag::cat({empty, empty}, 0).shape() == shape_t{0, 4});
      const auto one = rt.from_vector({1}, {-2.5f}, d);
      CHECK(ag::exp(one).to_vector()[0] == std::exp(-2.5f));
      CHECK(ag::softmax(one, 0).to_vector() == std::vector<float>{1.0f});
      CHECK(one.argmax(0).values<int64_t>() == std::vector<int64_t>{0});
      CHECK(ag::layer_norm(one, ag::tensor{}, ag::tensor{}).to_vector() == std::vector<float>{0});
      CHECK(one.astype(dtype::float16).astype(dtype::int32).values<int32_t>()
            == std::vector<int32_t>{-2});
    }
  }
}
