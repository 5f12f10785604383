// The shape rules of N-D tensors (graph/shape_rules.hpp) against PyTorch's documented semantics,
// and broadcast strides against a reference that walks every element.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "actorgraph/error.hpp"
#include "graph/shape_rules.hpp"

using ag::shape_t;
using Catch::Contains;
namespace d = ag::detail;

TEST_CASE("broadcasting aligns shapes at their last dimension, each pair equal or one of them 1",
          "[graph][shapes]") {
  CHECK(d::broadcast_shapes({2, 3}, {3}, "add") == shape_t{2, 3});
  CHECK(d::broadcast_shapes({5, 1, 4}, {3, 1}, "add") == shape_t{5, 3, 4});
  CHECK(d::broadcast_shapes({}, {2}, "add") == shape_t{2});
  CHECK(d::broadcast_shapes({}, {}, "add") == shape_t{});
  CHECK(d::broadcast_shapes({0}, {1}, "add") == shape_t{0});
  CHECK(d::broadcast_shapes({2, 0}, {2, 1}, "add") == shape_t{2, 0});
  CHECK(d::broadcast_shapes({1, 7}, {6, 1}, "mul") == shape_t{6, 7});
  CHECK_THROWS_WITH(d::broadcast_shapes({2, 3}, {2}, "add"),
                    "add: shapes [2,3] and [2] do not broadcast (dimension -1: 3 vs 2)");
  CHECK_THROWS_WITH(d::broadcast_shapes({4, 3}, {2, 3}, "where"),
                    Contains("dimension -2: 4 vs 2"));
  CHECK_THROWS_WITH(d::broadcast_shapes({0}, {2}, "add"), Contains("0 vs 2"));
}

TEST_CASE("broadcast strides read every element of the result from the element it repeats",
          "[graph][shapes]") {
  std::mt19937 gen{7};
  std::uniform_int_distribution<int> rank(0, 4), size(1, 3), keep(0, 2);
  for (int trial = 0; trial < 300; ++trial) {
    shape_t to(static_cast<std::size_t>(rank(gen)));
    for (auto& x : to)
      x = size(gen);
    // A shape that broadcasts to `to`: a suffix of it, some dimensions set to 1.
    shape_t from(to.begin() + static_cast<std::ptrdiff_t>(to.size() - std::min<std::size_t>(
                                                                           to.size(), rank(gen))),
                 to.end());
    for (auto& x : from)
      if (keep(gen) == 0)
        x = 1;
    REQUIRE(d::broadcast_shapes(from, to, "t") == to);
    const auto strides = d::broadcast_strides(from, d::contiguous_strides(from), to);
    // Reference: the coordinates of each element of `to`, reduced to `from`'s, row-major.
    const auto n = static_cast<int64_t>(d::element_count(to, "t"));
    for (int64_t flat = 0; flat < n; ++flat) {
      shape_t coord(to.size());
      int64_t rest = flat;
      for (std::size_t i = to.size(); i-- > 0;) {
        coord[i] = rest % to[i];
        rest /= to[i];
      }
      int64_t expected = 0;
      const std::size_t lead = to.size() - from.size();
      for (std::size_t i = 0; i < from.size(); ++i)
        expected = expected * from[i] + (from[i] == 1 ? 0 : coord[lead + i]);
      int64_t got = 0;
      for (std::size_t i = 0; i < to.size(); ++i)
        got += coord[i] * strides[i];
      REQUIRE(got == expected);
    }
  }
}

TEST_CASE("contiguous strides are row-major, and a dimension of 0 or 1 changes none after it",
          "[graph][shapes]") {
  CHECK(d::contiguous_strides({2, 3, 4}) == shape_t{12, 4, 1});
  CHECK(d::contiguous_strides({}) == shape_t{});
  CHECK(d::contiguous_strides({5}) == shape_t{1});
  CHECK(d::contiguous_strides({3, 0, 2}) == shape_t{2, 2, 1});
}

TEST_CASE("element counts refuse negative dimensions, more than 8 dimensions and overflow",
          "[graph][shapes]") {
  CHECK(d::element_count({}, "full") == 1);
  CHECK(d::element_count({2, 0, int64_t{1} << 62}, "full") == 0);
  CHECK(d::element_count({1, 1, 1, 1, 1, 1, 1, 2}, "full") == 2);
  CHECK_THROWS_WITH(d::element_count({1, 1, 1, 1, 1, 1, 1, 1, 1}, "full"),
                    "full: shape [1,1,1,1,1,1,1,1,1] has 9 dimensions; at most 8");
  CHECK_THROWS_WITH(d::element_count({2, -1}, "full"), "full: negative dimension in shape [2,-1]");
  CHECK_THROWS_WITH(d::element_count({int64_t{1} << 31, int64_t{1} << 31}, "full"),
                    Contains("more elements than"));
}

TEST_CASE("a dimension counts from the end when negative, and a scalar takes 0 and -1",
          "[graph][shapes]") {
  CHECK(d::wrap_dim(-1, 3, "sum") == 2);
  CHECK(d::wrap_dim(0, 3, "sum") == 0);
  CHECK(d::wrap_dim(-3, 3, "sum") == 0);
  CHECK(d::wrap_dim(0, 0, "sum") == 0);
  CHECK(d::wrap_dim(-1, 0, "sum") == 0);
  CHECK_THROWS_WITH(d::wrap_dim(3, 3, "softmax"),
                    "softmax: dimension 3 is out of range for 3 dimensions (expected -3 to 2)");
  CHECK_THROWS_WITH(d::wrap_dim(-4, 3, "softmax"), Contains("dimension -4 is out of range"));
  CHECK_THROWS_WITH(d::wrap_dim(1, 0, "sum"), Contains("for 0 dimensions (expected -1 to 0)"));
}

TEST_CASE("reshape infers at most one dimension and keeps the element count", "[graph][shapes]") {
  CHECK(d::reshape_shape({2, 3, 4}, {-1, 4}, "reshape") == shape_t{6, 4});
  CHECK(d::reshape_shape({2, 3, 4}, {4, -1, 2}, "reshape") == shape_t{4, 3, 2});
  CHECK(d::reshape_shape({6}, {2, 3}, "reshape") == shape_t{2, 3});
  CHECK(d::reshape_shape({1}, {}, "reshape") == shape_t{});
  CHECK(d::reshape_shape({}, {-1}, "reshape") == shape_t{1});
  CHECK(d::reshape_shape({0, 3}, {-1, 3}, "reshape") == shape_t{0, 3});
  CHECK(d::reshape_shape({0, 3}, {3, 0, 5}, "reshape") == shape_t{3, 0, 5});
  CHECK_THROWS_WITH(d::reshape_shape({6}, {4, 2}, "reshape"),
                    "reshape: shape [4,2] cannot hold the 6 elements of [6]");
  CHECK_THROWS_WITH(d::reshape_shape({6}, {-1, -1}, "reshape"),
                    "reshape: shape [-1,-1] infers more than one dimension (-1)");
  CHECK_THROWS_WITH(d::reshape_shape({6}, {-2, 3}, "reshape"),
                    Contains("invalid dimension -2 in shape [-2,3]"));
  CHECK_THROWS_WITH(d::reshape_shape({6}, {-1, 4}, "reshape"),
                    Contains("cannot hold the 6 elements"));
  CHECK_THROWS_WITH(d::reshape_shape({0, 3}, {-1, 0}, "reshape"),
                    Contains("cannot hold the 0 elements"));
  // Dimensions whose product passes 2^64, before or after the one inferred, or a bad one after.
  CHECK_THROWS_WITH(d::reshape_shape({6}, {INT64_MAX, INT64_MAX, -1}, "reshape"),
                    Contains("cannot hold the 6 elements"));
  CHECK_THROWS_WITH(d::reshape_shape({6}, {-1, INT64_MAX, INT64_MAX}, "reshape"),
                    Contains("cannot hold the 6 elements"));
  CHECK_THROWS_WITH(d::reshape_shape({6}, {INT64_MAX, INT64_MAX, -2}, "reshape"),
                    Contains("invalid dimension -2"));
  CHECK_THROWS_WITH(d::reshape_shape({6}, {1, 1, 1, 1, 1, 1, 1, 1, 6}, "reshape"),
                    Contains("has 9 dimensions; at most 8"));
}

TEST_CASE("a permutation names every dimension once", "[graph][shapes]") {
  const shape_t s{2, 3, 4};
  CHECK(d::permuted(s, d::permutation(s, {2, 0, 1}, "permute")) == shape_t{4, 2, 3});
  CHECK(d::permuted(s, d::permutation(s, {-1, -2, -3}, "permute")) == shape_t{4, 3, 2});
  CHECK(d::permutation({}, {}, "permute").empty());
  CHECK_THROWS_WITH(d::permutation(s, {0, 1}, "permute"),
                    "permute: order (0, 1) names 2 dimensions; shape [2,3,4] has 3");
  CHECK_THROWS_WITH(d::permutation(s, {0, 1, -3}, "permute"),
                    "permute: order (0, 1, -3) repeats dimension 0");
}

TEST_CASE("slices clamp as Python's do", "[graph][shapes]") {
  auto bounds = [](int64_t a, int64_t b, int64_t n) {
    const auto s = d::clamp_slice(a, b, n);
    return std::vector<int64_t>{s.start, s.end};
  };
  CHECK(bounds(1, 3, 5) == std::vector<int64_t>{1, 3});
  CHECK(bounds(-2, 100, 5) == std::vector<int64_t>{3, 5});
  CHECK(bounds(4, 2, 5) == std::vector<int64_t>{4, 4});
  CHECK(bounds(-100, -1, 5) == std::vector<int64_t>{0, 4});
  CHECK(bounds(0, 0, 0) == std::vector<int64_t>{0, 0});
  // Reference: Python's slice of range(n), for every start and end in [-n - 2, n + 2].
  for (int64_t n = 0; n < 5; ++n)
    for (int64_t a = -n - 2; a <= n + 2; ++a)
      for (int64_t b = -n - 2; b <= n + 2; ++b) {
        std::vector<int64_t> picked;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t lo = a < 0 ? a + n : a, hi = b < 0 ? b + n : b;
          if (i >= lo && i < hi)
            picked.push_back(i);
        }
        const auto s = d::clamp_slice(a, b, n);
        REQUIRE(s.size() == static_cast<int64_t>(picked.size()));
        if (!picked.empty())
          REQUIRE(s.start == picked.front());
      }
}

TEST_CASE("cat joins tensors of one rank that agree but along its dimension", "[graph][shapes]") {
  CHECK(d::cat_shape({{2, 3}, {4, 3}}, 0, "cat") == shape_t{6, 3});
  CHECK(d::cat_shape({{2, 3}, {2, 1}, {2, 0}}, -1, "cat") == shape_t{2, 4});
  CHECK(d::cat_shape({{0, 3}}, 0, "cat") == shape_t{0, 3});
  CHECK_THROWS_WITH(d::cat_shape({}, 0, "cat"), "cat: no tensors to join");
  CHECK_THROWS_WITH(d::cat_shape({{}, {}}, 0, "cat"), Contains("a scalar (shape []) cannot"));
  CHECK_THROWS_WITH(d::cat_shape({{2, 3}, {2, 4}}, 0, "cat"),
                    "cat: tensor 1 of shape [2,4] does not match tensor 0 of shape [2,3] but "
                    "along dimension 0");
  CHECK_THROWS_WITH(d::cat_shape({{2, 3}, {2, 3, 1}}, 0, "cat"), Contains("tensor 1 of shape"));
  CHECK_THROWS_WITH(d::cat_shape({{2}, {2}}, 1, "cat"), Contains("dimension 1 is out of range"));
  CHECK_THROWS_WITH(d::cat_shape({{INT64_MAX}, {1}}, 0, "cat"), Contains("exceeds 2^63 - 1"));
}

TEST_CASE("a reduction drops its dimensions, or keeps them as 1", "[graph][shapes]") {
  const shape_t s{2, 3, 4};
  CHECK(d::reduced_dims(s, {}, "sum") == std::vector<std::size_t>{0, 1, 2});
  CHECK(d::reduced_dims(s, {-1, 0}, "sum") == std::vector<std::size_t>{0, 2});
  CHECK(d::reduce_shape(s, d::reduced_dims(s, {1}, "sum"), false) == shape_t{2, 4});
  CHECK(d::reduce_shape(s, d::reduced_dims(s, {1}, "sum"), true) == shape_t{2, 1, 4});
  CHECK(d::reduce_shape(s, d::reduced_dims(s, {}, "sum"), false) == shape_t{});
  CHECK(d::reduce_shape(s, d::reduced_dims(s, {}, "sum"), true) == shape_t{1, 1, 1});
  CHECK(d::reduce_shape({}, d::reduced_dims({}, {-1}, "sum"), true) == shape_t{});
  CHECK_THROWS_WITH(d::reduced_dims(s, {1, -2}, "mean"),
                    "mean: dimensions (1, -2) repeat dimension 1");
  CHECK_THROWS_WITH(d::reduced_dims(s, {3}, "max"), Contains("dimension 3 is out of range"));
}

TEST_CASE("matmul follows torch.matmul: vectors, matrices and broadcast batches",
          "[graph][shapes]") {
  auto out = [](const shape_t& a, const shape_t& b) { return d::plan_matmul(a, b, "matmul").out; };
  CHECK(out({3}, {3}) == shape_t{});
  CHECK(out({3}, {3, 4}) == shape_t{4});
  CHECK(out({2, 3}, {3}) == shape_t{2});
  CHECK(out({2, 3}, {3, 4}) == shape_t{2, 4});
  CHECK(out({5, 2, 3}, {3}) == shape_t{5, 2});
  CHECK(out({3}, {5, 3, 4}) == shape_t{5, 4});
  CHECK(out({5, 1, 2, 3}, {4, 3, 7}) == shape_t{5, 4, 2, 7});
  CHECK(out({0, 3}, {3, 2}) == shape_t{0, 2});
  const auto p = d::plan_matmul({5, 1, 2, 3}, {4, 3, 7}, "matmul");
  CHECK(p.batch == shape_t{5, 4});
  CHECK(p.a_batch == shape_t{5, 1});
  CHECK(p.b_batch == shape_t{4});
  CHECK(p.m == 2);
  CHECK(p.k == 3);
  CHECK(p.n == 7);
  CHECK_THROWS_WITH(d::plan_matmul({2, 3}, {4, 5}, "matmul"),
                    "matmul: shapes [2,3] and [4,5] cannot be multiplied (3 vs 4 in the inner "
                    "dimension)");
  CHECK_THROWS_WITH(d::plan_matmul({}, {3}, "matmul"),
                    Contains("both operands need at least one dimension"));
  CHECK_THROWS_WITH(d::plan_matmul({2, 2, 3}, {3, 3, 4}, "matmul"),
                    "matmul: the batch dimensions of shapes [2,2,3] and [3,3,4] do not broadcast "
                    "([2] vs [3])");
}
