// A step's batch on the wire (graph/step_shape.hpp, ipc/execute_codec.cpp): shapes and values,
// decoded whole by the controller's readers, and by a child with a shape memo into the shape it
// decoded the first time and this run's values, other lanes' batches passed over.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "graph/step_shape.hpp"
#include "ipc/wire.hpp"

using Catch::Contains;

namespace {

// Step s on lane `lane`: t = x + y, u = t * s (a scalar), a random fill seeded by s, a copy of u
// to the store at `offset`; ids from `id`.
ag::batch step_batch(uint32_t lane, uint64_t s, uint64_t id, uint64_t offset, uint64_t count = 64) {
  ag::batch b;
  b.lane = lane;
  b.ops_before = 4 * s;
  b.step = s;
  b.ops.push_back(ag::make_op(ag::op_kind::add, {id}, {1}, {2}, count, 0, 0, 0));
  b.ops.back().layout.shape = {8, int64_t(count / 8)};
  b.ops.back().layout.strides = {int64_t(count / 8), 1, int64_t(count / 8), 1, 0, 1};
  b.ops.push_back(ag::make_op(ag::op_kind::mul, {id + 1}, {id}, {}, count, 0, 0, 0, double(s)));
  auto rnd = ag::make_op(ag::op_kind::random, {id + 2}, {}, {}, count, s * 7, 0, s * 11, 0.5);
  rnd.scalar2 = -1.0;
  b.ops.push_back(rnd);
  b.ops.push_back(ag::make_op(ag::op_kind::copy, {0, offset}, {id + 1}, {}, count, 0, 0, 0));
  b.no_hold = {id, id + 1};
  return b;
}

bool same(const ag::op_desc& x, const ag::op_desc& y) {
  uint64_t wx[ag::value_words], wy[ag::value_words];
  ag::put_values(x, wx);
  ag::put_values(y, wy);
  return std::memcmp(wx, wy, sizeof wx) == 0 && x.kind == y.kind && x.count == y.count
         && x.k == y.k && x.type == y.type && x.in_type == y.in_type
         && x.layout.shape == y.layout.shape && x.layout.strides == y.layout.strides;
}

void check_whole(const ag::batch& want, ag::batch got) {
  ag::materialize(got);
  CHECK_FALSE(got.shape);
  CHECK(got.values.empty());
  CHECK(got.lane == want.lane);
  CHECK(got.ops_before == want.ops_before);
  CHECK(got.step == want.step);
  CHECK(got.no_hold == want.no_hold);
  REQUIRE(got.ops.size() == want.ops.size());
  for (std::size_t k = 0; k < want.ops.size(); ++k)
    CHECK(same(want.ops[k], got.ops[k]));
}

ag::wire::bytes encoded(std::vector<ag::batch> batches) {
  ag::wire::execute_msg m;
  m.batches = std::move(batches);
  return ag::wire::encode(m);
}

} // namespace

TEST_CASE("a step's batch read by a child comes as the shape it decoded once and its values",
          "[ipc][steps]") {
  ag::wire::shape_memo memo;
  std::shared_ptr<const ag::step_shape> first;
  for (uint64_t s = 1; s <= 5; ++s) {
    CAPTURE(s);
    const auto mine = step_batch(2, s, 100 * s, 256 * s);
    const auto other = step_batch(3, s, 100 * s + 50, 0);
    const auto bytes = encoded({other, mine});
    ag::wire::execute_msg m;
    ag::wire::decode(bytes.data(), bytes.size(), m, memo, 2);
    REQUIRE(m.batches.size() == 1); // lane 3's passed over
    const auto& b = m.batches[0];
    REQUIRE(b.shape);
    CHECK(b.ops.empty());
    CHECK(b.op_count() == 4);
    CHECK(b.ops_after() == mine.ops_after());
    if (s == 1)
      first = b.shape;
    CHECK(b.shape == first); // not decoded again
    CHECK(ag::operand_at(b, 3, 0).offset == 256 * s);
    CHECK(ag::operand_at(b, 1, 1).id == 100 * s);
    check_whole(mine, b);
    // The controller's readers (traces, a replay) read it whole.
    ag::wire::execute_msg whole;
    ag::wire::decode(bytes.data(), bytes.size(), whole);
    REQUIRE(whole.batches.size() == 2);
    CHECK_FALSE(whole.batches[1].shape);
    check_whole(mine, whole.batches[1]);
    check_whole(other, whole.batches[0]);
  }
}

TEST_CASE("a shape memo keeps the last 64 shapes and decodes an older one again", "[ipc][steps]") {
  ag::wire::shape_memo memo;
  std::vector<std::shared_ptr<const ag::step_shape>> shapes;
  auto read = [&](uint64_t count, uint64_t s) {
    const auto want = step_batch(1, s, 10 * s, 0, count);
    const auto bytes = encoded({want});
    ag::wire::execute_msg m;
    ag::wire::decode(bytes.data(), bytes.size(), m, memo, 1);
    REQUIRE(m.batches.size() == 1);
    check_whole(want, m.batches[0]);
    return m.batches[0].shape;
  };
  for (uint64_t i = 0; i <= ag::wire::shape_memo::capacity; ++i) // one more than it keeps
    shapes.push_back(read(8 * (i + 1), i + 1));
  CHECK(read(8 * 2, 100) == shapes[1]);                     // still there
  CHECK(read(8 * 1, 101) != shapes[0]);                     // gone, decoded again
  CHECK(read(8 * (ag::wire::shape_memo::capacity + 1), 102) == shapes.back());
}

TEST_CASE("a step's batch whose values do not fit its operators, or whose shape is malformed, is "
          "refused",
          "[ipc][steps]") {
  ag::wire::execute_msg m;
  m.batches.push_back(step_batch(1, 3, 10, 0));
  auto bytes = ag::wire::encode(m);
  // The values' length is the last varbyte before the values (4 operators: 48 words).
  const auto values_bytes = 4 * ag::value_words * sizeof(uint64_t);
  auto at = bytes.size() - values_bytes - 1;
  REQUIRE(bytes[at] == char(48));
  bytes[at] = 47;
  bytes.resize(bytes.size() - sizeof(uint64_t));
  ag::wire::shape_memo memo;
  ag::wire::execute_msg back;
  CHECK_THROWS_WITH(ag::wire::decode(bytes.data(), bytes.size(), back, memo, 1),
                    Contains("lane 1 has 47 value words for 4 operators"));
  CHECK_THROWS_WITH(ag::wire::decode(bytes.data(), bytes.size(), back),
                    Contains("lane 1 has 47 value words for 4 operators"));
  // Values outside a step.
  m.batches[0].step = 0;
  m.batches[0].values.assign(4 * ag::value_words, 0);
  bytes = ag::wire::encode(m);
  CHECK_THROWS_WITH(ag::wire::decode(bytes.data(), bytes.size(), back, memo, 1),
                    Contains("outside a step"));
  // A malformed operator in a new shape is refused before the memo keeps it, and again after.
  m.batches[0] = step_batch(1, 3, 10, 0);
  m.batches[0].ops[0].type = static_cast<ag::dtype>(200);
  bytes = ag::wire::encode(m);
  for (int i = 0; i < 2; ++i)
    CHECK_THROWS_WITH(ag::wire::decode(bytes.data(), bytes.size(), back, memo, 1),
                      Contains("lane 1 has add with dtype #200"));
  // Every truncation of a step's batch.
  m.batches[0] = step_batch(1, 3, 10, 0);
  bytes = ag::wire::encode(m);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    CHECK_THROWS_WITH(ag::wire::decode(bytes.data(), n, back, memo, 1), Contains("truncated"));
  }
}
