// The Execute body's own writer and reader (ipc/execute_codec.cpp) against CAF's binary serializer
// on the same schema: the same bytes for random batches (layouts, every field), the same values
// back, and every truncation, trailing byte and oversized length refused.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "graph/step_shape.hpp"
#include "ipc/serial.hpp"
#include "ipc/wire.hpp"

namespace {

ag::wire::execute_msg random_message(std::mt19937_64& rng) {
  auto u = [&](uint64_t n) { return rng() % n; };
  ag::wire::execute_msg m;
  const auto batches = 1 + u(3);
  for (uint64_t i = 0; i < batches; ++i) {
    ag::batch b;
    b.lane = static_cast<uint32_t>(1 + u(5));
    b.ops_before = rng();
    b.step = u(2) ? rng() : 0;
    const auto ops = u(6);
    for (uint64_t k = 0; k < ops; ++k) {
      ag::op_desc op;
      op.kind = static_cast<ag::op_kind>(u(ag::op_kind_count));
      if (op.kind == ag::op_kind::upload)
        op.kind = ag::op_kind::add;
      for (auto* r : {&op.out, &op.a, &op.b, &op.c})
        *r = {rng(), u(2) ? rng() : ag::operand_ref::no_offset};
      op.count = rng(), op.m = rng(), op.k = u(300), op.n = rng();
      const uint64_t bits = rng(), bits2 = rng(); // any 64 bits: NaN payloads and -0 too
      std::memcpy(&op.scalar, &bits, 8);
      std::memcpy(&op.scalar2, &bits2, 8);
      op.type = static_cast<ag::dtype>(u(6));
      op.in_type = static_cast<ag::dtype>(u(6));
      if (u(2)) {
        const auto dims = 1 + u(4);
        for (uint64_t d = 0; d < dims; ++d)
          op.layout.shape.push_back(static_cast<int64_t>(u(1000)));
        for (uint64_t d = 0; d < 3 * dims; ++d)
          op.layout.strides.push_back(static_cast<int64_t>(rng()));
        op.layout.a_offset = static_cast<int64_t>(rng());
        op.layout.b_offset = -3;
        op.layout.c_offset = static_cast<int64_t>(u(9));
      }
      b.ops.push_back(op);
    }
    for (uint64_t k = u(200); k > 0; --k) // past 127: a two-byte length
      b.no_hold.push_back(rng());
    m.batches.push_back(b);
  }
  return m;
}

bool same(const ag::op_desc& x, const ag::op_desc& y) {
  return x.kind == y.kind && x.out.id == y.out.id && x.out.offset == y.out.offset
         && x.a.id == y.a.id && x.a.offset == y.a.offset && x.b.id == y.b.id
         && x.b.offset == y.b.offset && x.c.id == y.c.id && x.c.offset == y.c.offset
         && x.count == y.count && x.m == y.m && x.k == y.k && x.n == y.n
         && std::memcmp(&x.scalar, &y.scalar, 8) == 0
         && std::memcmp(&x.scalar2, &y.scalar2, 8) == 0 && x.type == y.type
         && x.in_type == y.in_type && x.layout.shape == y.layout.shape
         && x.layout.strides == y.layout.strides && x.layout.a_offset == y.layout.a_offset
         && x.layout.b_offset == y.layout.b_offset && x.layout.c_offset == y.layout.c_offset;
}

// m as the wire carries it: a step's operators as their shapes, and their values.
ag::wire::execute_msg split(ag::wire::execute_msg m) {
  for (auto& b : m.batches) {
    if (!ag::wire::split_on_wire(b))
      continue;
    b.values.resize(b.ops.size() * ag::value_words);
    for (std::size_t k = 0; k < b.ops.size(); ++k) {
      ag::put_values(b.ops[k], &b.values[k * ag::value_words]);
      b.ops[k] = ag::shape_of(b.ops[k]);
    }
  }
  return m;
}

} // namespace

TEST_CASE("the Execute writer writes what CAF's serializer writes and its size says", "[ipc]") {
  std::mt19937_64 rng{7};
  int steps = 0;
  for (int i = 0; i < 300; ++i) {
    CAPTURE(i);
    auto m = random_message(rng);
    const auto mine = ag::wire::encode(m);
    auto wire_form = split(m);
    CHECK(mine == ag::serial::encode(wire_form, "test"));
    CHECK(mine.size() == ag::wire::encoded_size(m));
    for (const auto& b : wire_form.batches)
      steps += b.values.empty() ? 0 : 1;
  }
  CHECK(steps > 100); // the split form was written
}

TEST_CASE("the Execute reader reads back every field CAF's serializer wrote", "[ipc]") {
  std::mt19937_64 rng{11};
  for (int i = 0; i < 300; ++i) {
    CAPTURE(i);
    auto m = random_message(rng);
    // The split form (a step's shapes and values) and the whole one read back alike.
    auto wire_form = i % 2 == 0 ? split(m) : m;
    const auto bytes = ag::serial::encode(wire_form, "test");
    ag::wire::execute_msg back;
    // Malformed operators are refused after reading: only well-formed ones come back.
    bool well_formed = true;
    for (const auto& b : m.batches)
      for (const auto& op : b.ops)
        well_formed = well_formed && ag::malformed(op).empty();
    if (!well_formed) {
      CHECK_THROWS_WITH(ag::wire::decode(bytes.data(), bytes.size(), back),
                        Catch::Contains("wire: malformed execute message: lane"));
      continue;
    }
    ag::wire::decode(bytes.data(), bytes.size(), back);
    REQUIRE(back.batches.size() == m.batches.size());
    for (std::size_t b = 0; b < m.batches.size(); ++b) {
      const auto &x = m.batches[b], &y = back.batches[b];
      CHECK(x.lane == y.lane);
      CHECK(x.ops_before == y.ops_before);
      CHECK(x.step == y.step);
      CHECK(x.no_hold == y.no_hold);
      CHECK(y.values.empty()); // made whole
      REQUIRE(x.ops.size() == y.ops.size());
      for (std::size_t k = 0; k < x.ops.size(); ++k)
        CHECK(same(x.ops[k], y.ops[k]));
    }
  }
}

TEST_CASE("the Execute reader refuses every truncation, a trailing byte and a length beyond the "
          "buffer",
          "[ipc]") {
  ag::wire::execute_msg m;
  ag::batch b;
  b.lane = 1;
  b.ops.push_back(ag::make_op(ag::op_kind::add, {5}, {1}, {2}, 16, 0, 0, 0));
  b.ops.back().layout.shape = {4, 4};
  b.ops.back().layout.strides = {4, 1, 0, 1, 4, 0};
  b.no_hold = {1, 2};
  m.batches.push_back(b);
  auto bytes = ag::wire::encode(m);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    ag::wire::execute_msg back;
    CHECK_THROWS_WITH(ag::wire::decode(bytes.data(), n, back),
                      Catch::Contains("truncated or a length beyond the " + std::to_string(n)
                                      + "-byte buffer"));
  }
  bytes.push_back(0);
  ag::wire::execute_msg back;
  CHECK_THROWS_WITH(ag::wire::decode(bytes.data(), bytes.size(), back),
                    Catch::Contains("1 trailing bytes"));
  // One batch claiming 2^31 operators, a frame of a few bytes: refused before anything is made.
  const std::vector<char> huge{1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                               char(0x80), char(0x80), char(0x80), char(0x80), 0x08};
  CHECK_THROWS_WITH(ag::wire::decode(huge.data(), huge.size(), back),
                    Catch::Contains("truncated"));
  // A length of six groups (more than 32 bits) likewise.
  const std::vector<char> long_length{char(0x81), char(0x80), char(0x80), char(0x80),
                                      char(0x80), 0x01};
  CHECK_THROWS_WITH(ag::wire::decode(long_length.data(), long_length.size(), back),
                    Catch::Contains("truncated"));
}
