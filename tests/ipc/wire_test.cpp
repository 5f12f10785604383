// Tests of ipc/wire: every message survives an encode/decode round trip, and every malformed frame
// (truncated, padded, lying about a length, carrying a bad enum value, random bytes) is an ag::error
// naming what was wrong, never a crash and never a huge allocation.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <sys/resource.h>

#include "actorgraph/error.hpp"
#include "graph/op.hpp"
#include "ipc/wire.hpp"

using ag::op_desc;
using ag::op_kind;
using ag::operand_ref;
namespace wire = ag::wire;

namespace {

void check_same(const operand_ref& x, const operand_ref& y) {
  CHECK(x.id == y.id);
  CHECK(x.offset == y.offset);
}

void check_same(const op_desc& x, const op_desc& y) {
  CHECK(x.kind == y.kind);
  check_same(x.out, y.out);
  check_same(x.a, y.a);
  check_same(x.b, y.b);
  CHECK(x.count == y.count);
  CHECK(x.m == y.m);
  CHECK(x.k == y.k);
  CHECK(x.n == y.n);
  CHECK(std::memcmp(&x.scalar, &y.scalar, sizeof x.scalar) == 0);
  CHECK(x.type == y.type);
  CHECK(x.in_type == y.in_type);
  check_same(x.c, y.c);
  CHECK(x.layout.shape == y.layout.shape);
  CHECK(x.layout.strides == y.layout.strides);
  CHECK(x.layout.a_offset == y.layout.a_offset);
  CHECK(x.layout.b_offset == y.layout.b_offset);
  CHECK(x.layout.c_offset == y.layout.c_offset);
}

void check_same(const ag::batch& x, const ag::batch& y) {
  CHECK(x.lane == y.lane);
  CHECK(x.ops_before == y.ops_before);
  REQUIRE(x.ops.size() == y.ops.size());
  for (std::size_t i = 0; i < x.ops.size(); ++i) {
    INFO("op " << i);
    check_same(x.ops[i], y.ops[i]);
  }
  CHECK(x.no_hold == y.no_hold);
}

// Every operator kind a runner executes (all but upload), each with distinct field values.
std::vector<op_desc> one_op_of_every_kind() {
  std::vector<op_desc> ops;
  for (std::size_t k = 0; k < ag::op_kind_count; ++k) {
    if (static_cast<op_kind>(k) == op_kind::upload)
      continue;
    op_desc op;
    op.kind = static_cast<op_kind>(k);
    op.out = operand_ref{100 + k, k % 2 == 0 ? operand_ref::no_offset : 256 * k};
    op.a = operand_ref{200 + k, operand_ref::no_offset};
    op.b = operand_ref{300 + k, 512 * k};
    op.count = 1000 + k;
    op.m = 3 + k;
    op.k = 5 + k;
    op.n = 7 + k;
    op.scalar = -1.5f * static_cast<float>(k + 1);
    op.type = static_cast<ag::dtype>(k % ag::dtype_count);
    op.in_type = static_cast<ag::dtype>((k + 1) % ag::dtype_count);
    op.c = operand_ref{400 + k, k % 3 == 0 ? operand_ref::no_offset : 64 * k};
    ops.push_back(op);
  }
  return ops;
}

wire::execute_msg sample_execute() {
  wire::execute_msg msg;
  ag::batch first;
  first.lane = 0;
  first.ops_before = 0;
  first.ops = one_op_of_every_kind();
  first.no_hold = {101, 205, std::numeric_limits<uint64_t>::max()};
  ag::batch second;
  second.lane = 1;
  second.ops_before = 123456789012ull;
  second.ops = one_op_of_every_kind();
  second.ops.back().scalar = 1e30f;
  second.ops.back().layout = {{2, 3, 5}, {15, 5, 1, 0, 1, 0, 0, 0, 0}, 7, 0, 0};
  ag::batch empty; // a lane with nothing to run this time
  empty.lane = 7;
  empty.ops_before = 42;
  msg.batches = {first, second, empty};
  return msg;
}

wire::startup_args sample_args() {
  wire::startup_args args;
  args.pub_endpoint = "ipc:///tmp/ag-abc123/pub";
  args.pull_endpoint = "ipc:///tmp/ag-abc123/pull";
  args.where = ag::device::sim(3);
  args.lane = 4;
  args.store_name = "/ag-store-1234";
  args.store_bytes = uint64_t{1} << 34;
  args.parent_pid = 98765;
  return args;
}

// The bytes CAF's binary serializer writes for a sequence length: 7 bits per byte, low bits first,
// the high bit set on every byte but the last.
void put_varbyte(wire::bytes& out, uint64_t n) {
  while (n > 0x7f) {
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
}

void put_u32(wire::bytes& out, uint32_t x) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((x >> shift) & 0xff));
}

void put_u64(wire::bytes& out, uint64_t x) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((x >> shift) & 0xff));
}

// Peak resident memory of this process, in KiB.
long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

template <class T>
void decode_into(const wire::bytes& b, T& x) {
  wire::decode(b.data(), b.size(), x);
}

template <class T>
void decode_fresh(const wire::bytes& b) {
  T x;
  wire::decode(b.data(), b.size(), x);
}

} // namespace

TEST_CASE("start-up arguments survive an encode and decode round trip", "[ipc]") {
  auto args = sample_args();
  const auto bytes = wire::encode(args);
  wire::startup_args back;
  decode_into(bytes, back);
  CHECK(back.version == wire::version);
  CHECK(back.pub_endpoint == args.pub_endpoint);
  CHECK(back.pull_endpoint == args.pull_endpoint);
  CHECK(back.where == args.where);
  CHECK(back.lane == args.lane);
  CHECK(back.store_name == args.store_name);
  CHECK(back.store_bytes == args.store_bytes);
  CHECK(back.parent_pid == args.parent_pid);
}

TEST_CASE("an execute message with several batches and every operator kind survives a round trip",
          "[ipc]") {
  auto msg = sample_execute();
  const auto bytes = wire::encode(msg);
  wire::execute_msg back;
  decode_into(bytes, back);
  REQUIRE(back.batches.size() == msg.batches.size());
  for (std::size_t i = 0; i < msg.batches.size(); ++i) {
    INFO("batch " << i);
    check_same(back.batches[i], msg.batches[i]);
  }
  CHECK(back.batches[1].ops_after() == msg.batches[1].ops_after());
}

TEST_CASE("an execute message without batches survives a round trip", "[ipc]") {
  wire::execute_msg msg;
  const auto bytes = wire::encode(msg);
  wire::execute_msg back;
  back.batches.resize(2); // decoding replaces what was there
  decode_into(bytes, back);
  CHECK(back.batches.empty());
}

TEST_CASE("encoded_size is the size of the encoded execute message, and of its batches", "[ipc]") {
  auto check = [](wire::execute_msg msg) {
    const auto bytes = wire::encode(msg);
    CHECK(wire::encoded_size(msg) == bytes.size());
    std::size_t batches = wire::length_bytes(msg.batches.size());
    for (const auto& b : msg.batches) {
      wire::execute_msg alone{{b}};
      CHECK(wire::encoded_size(b) == wire::encode(alone).size() - wire::length_bytes(1));
      batches += wire::encoded_size(b);
    }
    CHECK(batches == bytes.size());
  };
  auto with_ops = [](std::size_t ops, std::size_t no_hold) {
    ag::batch b;
    b.lane = 2;
    b.ops_before = 99;
    const auto kinds = one_op_of_every_kind();
    for (std::size_t i = 0; i < ops; ++i)
      b.ops.push_back(kinds[i % kinds.size()]);
    for (std::size_t i = 0; i < no_hold; ++i)
      b.no_hold.push_back(1000 + i);
    return b;
  };
  SECTION("no batches") { check({}); }
  SECTION("a batch of no operators") { check({{with_ops(0, 0)}}); }
  SECTION("one operator") { check({{with_ops(1, 0)}}); }
  SECTION("one operator and released operands") { check({{with_ops(1, 3)}}); }
  SECTION("many operators, lengths of 2 and 3 bytes") {
    check({{with_ops(200, 20000)}});
    check({{with_ops(16384, 128)}});
  }
  SECTION("several batches") { check(sample_execute()); }
  SECTION("200 batches") { check({std::vector<ag::batch>(200, with_ops(2, 1))}); }
}

TEST_CASE("an operator takes op_desc_bytes of an execute message, as the protocol says", "[ipc]") {
  CHECK(wire::op_desc_bytes == 141); // docs/PROTOCOL.md, section 3
  for (const auto& op : one_op_of_every_kind()) {
    wire::execute_msg one{{ag::batch{1, 0, {op}, {}}}};
    wire::execute_msg two{{ag::batch{1, 0, {op, op}, {}}}};
    CHECK(wire::encode(two).size() - wire::encode(one).size() == wire::op_desc_bytes);
    CHECK(wire::encoded_size(op) == wire::op_desc_bytes);
  }
  // A layout adds its dimensions: a rank-2 broadcast, 2 shape entries and 6 strides.
  ag::op_desc op;
  op.kind = ag::op_kind::add;
  op.layout.shape = {3, 4};
  op.layout.strides = {4, 1, 0, 1, 0, 0};
  wire::execute_msg one{{ag::batch{1, 0, {op}, {}}}};
  wire::execute_msg two{{ag::batch{1, 0, {op, op}, {}}}};
  CHECK(wire::encode(two).size() - wire::encode(one).size() == wire::op_desc_bytes + 8 * 8);
  CHECK(wire::encoded_size(op) == wire::op_desc_bytes + 8 * 8);
}

TEST_CASE("an operator of a dtype or layout that cannot be is refused naming it", "[ipc]") {
  ag::op_desc op;
  op.kind = ag::op_kind::add;
  op.type = static_cast<ag::dtype>(9);
  wire::execute_msg bad{{ag::batch{1, 0, {op}, {}}}};
  auto bytes = wire::encode(bad);
  wire::execute_msg got;
  CHECK_THROWS_WITH(wire::decode(bytes.data(), bytes.size(), got),
                    Catch::Contains("lane 1 has add with dtype #9"));
  op.type = ag::dtype::float32;
  op.layout.shape = {3, 4};
  op.layout.strides = {4, 1, 0};
  bad = {{ag::batch{1, 0, {op}, {}}}};
  bytes = wire::encode(bad);
  CHECK_THROWS_WITH(wire::decode(bytes.data(), bytes.size(), got),
                    Catch::Contains("add with a layout of 2 dimensions and 3 strides"));
}

TEST_CASE("length_bytes counts the bytes of a varbyte length as the encoder writes it", "[ipc]") {
  for (const uint64_t n : {0ull, 1ull, 127ull, 128ull, 16383ull, 16384ull, (1ull << 21) - 1,
                           1ull << 21, (1ull << 28) - 1, 1ull << 28, 0xffffffffull}) {
    INFO("n = " << n);
    wire::bytes expected;
    put_varbyte(expected, n);
    CHECK(wire::length_bytes(n) == expected.size());
  }
  CHECK(wire::max_length_bytes == 5);
  CHECK(wire::length_bytes((uint64_t{1} << 32) + 3) == 1); // truncated to 32 bits, as encoded
}

TEST_CASE("ready, done and failed messages survive a round trip", "[ipc]") {
  SECTION("ready") {
    wire::ready_msg msg{3, ag::device::cuda(2), 4242};
    const auto bytes = wire::encode(msg);
    wire::ready_msg back;
    decode_into(bytes, back);
    CHECK(back.lane == 3);
    CHECK(back.where == ag::device::cuda(2));
    CHECK(back.pid == 4242);
  }
  SECTION("done") {
    wire::done_msg msg{5, std::numeric_limits<uint64_t>::max(), uint64_t{1} << 40};
    const auto bytes = wire::encode(msg);
    wire::done_msg back;
    decode_into(bytes, back);
    CHECK(back.lane == 5);
    CHECK(back.ops_done == std::numeric_limits<uint64_t>::max());
    CHECK(back.device_bytes == uint64_t{1} << 40);
  }
  SECTION("failed, with a message longer than a varbyte of three bytes can count") {
    std::string what(3'000'000, 'x');
    for (std::size_t i = 0; i < what.size(); i += 997)
      what[i] = static_cast<char>('a' + i % 26);
    wire::failed_msg msg{2, 77, what};
    const auto bytes = wire::encode(msg);
    wire::failed_msg back;
    decode_into(bytes, back);
    CHECK(back.lane == 2);
    CHECK(back.index == 77);
    CHECK(back.what == what);
  }
  SECTION("failed, with an empty message") {
    wire::failed_msg msg{1, 0, ""};
    const auto bytes = wire::encode(msg);
    wire::failed_msg back{9, 9, "stale"};
    decode_into(bytes, back);
    CHECK(back.lane == 1);
    CHECK(back.index == 0);
    CHECK(back.what.empty());
  }
}

TEST_CASE("a header of every message type survives a round trip", "[ipc]") {
  using wire::msg_type;
  for (auto type : {msg_type::hello, msg_type::execute, msg_type::destroy, msg_type::ready,
                    msg_type::done, msg_type::failed, msg_type::received}) {
    for (uint64_t id : {uint64_t{0}, uint64_t{1}, uint64_t{0x0102030405060708},
                        std::numeric_limits<uint64_t>::max()}) {
      INFO(wire::to_string(type) << " #" << id);
      const auto bytes = wire::encode_header(wire::header{type, id});
      REQUIRE(bytes.size() == wire::header_size);
      const auto back = wire::decode_header(bytes.data(), bytes.size());
      CHECK(back.type == type);
      CHECK(back.id == id);
    }
  }
}

TEST_CASE("a header is big-endian, byte for byte, whatever this machine's order", "[ipc]") {
  const auto bytes = wire::encode_header(
    wire::header{wire::msg_type::data_in, 0x0102030405060708, 0x0a0b0c0d});
  const std::vector<unsigned char> expected{'A', 'G', wire::version, 4,    0x0a, 0x0b, 0x0c, 0x0d,
                                            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  CHECK(std::vector<unsigned char>(bytes.begin(), bytes.end()) == expected);
  const auto back = wire::decode_header(bytes.data(), bytes.size());
  CHECK(back.type == wire::msg_type::data_in);
  CHECK(back.id == 0x0102030405060708);
  CHECK(back.lane == 0x0a0b0c0d);
}

TEST_CASE("only data frames carry a lane in their header, and never lane 0", "[ipc]") {
  for (auto type : {wire::msg_type::data_in, wire::msg_type::data_out}) {
    INFO(wire::to_string(type));
    const auto ok = wire::encode_header(wire::header{type, 3, 2});
    CHECK(wire::decode_header(ok.data(), ok.size()).lane == 2);
    const auto cpu = wire::encode_header(wire::header{type, 3, 0});
    CHECK_THROWS_WITH(wire::decode_header(cpu.data(), cpu.size()), Catch::Contains("lane 0"));
  }
  auto done = wire::encode_header(wire::header{wire::msg_type::done, 3});
  done[7] = 1;
  CHECK_THROWS_WITH(wire::decode_header(done.data(), done.size()),
                    Catch::Contains("bytes 4-7 (the lane) are not zero in a done message"));
}

TEST_CASE("a data message's offset frame is 8 big-endian bytes", "[ipc]") {
  std::vector<char> frame(wire::data_offset_bytes + 1);
  wire::encode_data_offset(frame.data(), 0x1122334455667788);
  CHECK(static_cast<unsigned char>(frame[0]) == 0x11);
  CHECK(static_cast<unsigned char>(frame[7]) == 0x88);
  CHECK(wire::decode_data_offset(frame.data(), 8) == 0x1122334455667788);
  CHECK_THROWS_WITH(wire::decode_data_offset(frame.data(), 7),
                    Catch::Contains("an offset frame of 7 bytes, expected 8"));
  CHECK_THROWS_WITH(wire::decode_data_offset(frame.data(), 9), Catch::Contains("9 bytes"));
  CHECK(wire::carries_data(wire::msg_type::data_in));
  CHECK(wire::carries_data(wire::msg_type::data_out));
  CHECK_FALSE(wire::carries_data(wire::msg_type::data_sent));
  CHECK_FALSE(wire::carries_data(wire::msg_type::done));
}

TEST_CASE("message types have readable names and unknown ones show their number", "[ipc]") {
  CHECK(wire::to_string(wire::msg_type::execute) == "execute");
  CHECK(wire::to_string(wire::msg_type::ready) == "ready");
  CHECK(wire::to_string(static_cast<wire::msg_type>(99)) == "type#99");
}

TEST_CASE("every truncation of an execute message is an error", "[ipc]") {
  auto msg = sample_execute();
  const auto bytes = wire::encode(msg);
  REQUIRE(bytes.size() > 100);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    INFO("prefix of " << n << " of " << bytes.size() << " bytes");
    wire::execute_msg back;
    CHECK_THROWS_AS(wire::decode(bytes.data(), n, back), ag::error);
  }
}

TEST_CASE("every truncation of the other messages is an error", "[ipc]") {
  auto args = sample_args();
  wire::ready_msg ready{1, ag::device::sim(0), 10};
  wire::done_msg done{1, 2, 3};
  wire::failed_msg failed{1, 2, "operator failed"};
  const auto check_prefixes = [](const wire::bytes& bytes, auto msg) {
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      INFO("prefix of " << n << " of " << bytes.size() << " bytes");
      CHECK_THROWS_AS(wire::decode(bytes.data(), n, msg), ag::error);
    }
  };
  check_prefixes(wire::encode(args), wire::startup_args{});
  check_prefixes(wire::encode(ready), wire::ready_msg{});
  check_prefixes(wire::encode(done), wire::done_msg{});
  check_prefixes(wire::encode(failed), wire::failed_msg{});
}

TEST_CASE("trailing bytes after a message are an error naming them", "[ipc]") {
  SECTION("execute") {
    auto msg = sample_execute();
    auto bytes = wire::encode(msg);
    bytes.push_back('\0');
    wire::execute_msg back;
    CHECK_THROWS_WITH(decode_into(bytes, back), Catch::Contains("1 trailing bytes"));
  }
  SECTION("done") {
    wire::done_msg msg{1, 2, 3};
    auto bytes = wire::encode(msg);
    bytes.insert(bytes.end(), {'a', 'b', 'c'});
    wire::done_msg back;
    CHECK_THROWS_WITH(decode_into(bytes, back), Catch::Contains("3 trailing bytes"));
  }
  SECTION("failed") {
    wire::failed_msg msg{1, 2, "x"};
    auto bytes = wire::encode(msg);
    bytes.push_back('y');
    wire::failed_msg back;
    CHECK_THROWS_AS(decode_into(bytes, back), ag::error);
  }
}

TEST_CASE("a header frame of the wrong size is an error naming the size", "[ipc]") {
  const auto good = wire::encode_header(wire::header{wire::msg_type::done, 5});
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, wire::header_size - 1}) {
    INFO(size << " bytes");
    CHECK_THROWS_WITH(wire::decode_header(good.data(), size),
                      Catch::Contains(std::to_string(size) + " bytes"));
  }
  auto longer = good;
  longer.push_back('\0');
  CHECK_THROWS_WITH(wire::decode_header(longer.data(), longer.size()),
                    Catch::Contains("17 bytes"));
}

TEST_CASE("a header with a bad magic, another version or an unknown type is an error", "[ipc]") {
  auto bytes = wire::encode_header(wire::header{wire::msg_type::execute, 9});
  SECTION("bad magic") {
    bytes[0] ^= 0x5a;
    CHECK_THROWS_WITH(wire::decode_header(bytes.data(), bytes.size()), Catch::Contains("magic"));
  }
  SECTION("magic bytes swapped") {
    std::swap(bytes[0], bytes[1]);
    CHECK_THROWS_WITH(wire::decode_header(bytes.data(), bytes.size()), Catch::Contains("magic"));
  }
  SECTION("the next version") {
    bytes[2] = wire::version + 1;
    CHECK_THROWS_WITH(wire::decode_header(bytes.data(), bytes.size()),
                      Catch::Contains("version " + std::to_string(wire::version + 1)));
  }
  SECTION("version 0") {
    bytes[2] = 0;
    CHECK_THROWS_WITH(wire::decode_header(bytes.data(), bytes.size()),
                      Catch::Contains("version 0"));
  }
  SECTION("unknown type 99") {
    bytes[3] = 99;
    CHECK_THROWS_WITH(wire::decode_header(bytes.data(), bytes.size()),
                      Catch::Contains("type#99"));
  }
  SECTION("unknown type 0") {
    bytes[3] = 0;
    CHECK_THROWS_WITH(wire::decode_header(bytes.data(), bytes.size()),
                      Catch::Contains("type#0"));
  }
}

TEST_CASE("a string length far beyond the frame is refused before anything is allocated", "[ipc]") {
  // A failed message by hand: lane, index, then a string that claims n bytes but brings 3.
  const auto peak_before = peak_rss_kib();
  for (uint64_t claimed : {uint64_t{1} << 40, uint64_t{0xffffffff}, uint64_t{1} << 31,
                           uint64_t{1} << 20, uint64_t{4}}) {
    INFO("claimed length " << claimed);
    wire::bytes frame;
    put_u32(frame, 1);
    put_u64(frame, 2);
    put_varbyte(frame, claimed);
    frame.insert(frame.end(), {'a', 'b', 'c'});
    wire::failed_msg back;
    CHECK_THROWS_AS(decode_into(frame, back), ag::error);
  }
  // A string resized to the claimed length would have touched gigabytes.
  CHECK(peak_rss_kib() - peak_before < 64 * 1024);
}

// CAF's deserializer reads sequence lengths into 32 bits: the varbyte of 2^32 + 3 comes out as 3,
// and the frame decodes as if it had claimed the 3 bytes it brings.
TEST_CASE("a string length of 2^32 + 3 is refused, not read modulo 2^32", "[ipc]") {
  wire::bytes frame;
  put_u32(frame, 1);
  put_u64(frame, 2);
  put_varbyte(frame, (uint64_t{1} << 32) + 3);
  frame.insert(frame.end(), {'a', 'b', 'c'});
  wire::failed_msg back;
  CHECK_THROWS_AS(decode_into(frame, back), ag::error);
}

TEST_CASE("hand-built frames match what the encoder writes", "[ipc]") {
  // Guards the test above: were the layout guessed wrong, its frames would fail for another reason.
  wire::failed_msg msg{1, 2, "abc"};
  wire::bytes frame;
  put_u32(frame, 1);
  put_u64(frame, 2);
  put_varbyte(frame, 3);
  frame.insert(frame.end(), {'a', 'b', 'c'});
  CHECK(wire::encode(msg) == frame);
  wire::failed_msg back;
  decode_into(frame, back);
  CHECK(back.what == "abc");

  wire::bytes execute;
  put_varbyte(execute, 1); // one batch
  put_u32(execute, 6);     // lane
  put_u64(execute, 9);     // ops_before
  put_u64(execute, 4);     // step
  put_varbyte(execute, 0); // no operators
  put_varbyte(execute, 1); // one no_hold id
  put_u64(execute, 33);
  put_varbyte(execute, 0); // no values
  wire::execute_msg batch;
  decode_into(execute, batch);
  REQUIRE(batch.batches.size() == 1);
  CHECK(batch.batches[0].lane == 6);
  CHECK(batch.batches[0].ops_before == 9);
  CHECK(batch.batches[0].no_hold == std::vector<uint64_t>{33});
  CHECK(batch.batches[0].step == 4);
  CHECK(wire::encode(batch) == execute);
}

TEST_CASE("a vector length far beyond the frame is refused before anything is allocated", "[ipc]") {
  for (uint64_t claimed : {uint64_t{1} << 40, uint64_t{0xffffffff}, uint64_t{1} << 31}) {
    INFO("claimed length " << claimed);
    wire::execute_msg back;
    // The batches of an execute message.
    wire::bytes frame;
    put_varbyte(frame, claimed);
    frame.insert(frame.end(), 3, '\0');
    CHECK_THROWS_AS(decode_into(frame, back), ag::error);
    // The operators of its one batch.
    frame.clear();
    put_varbyte(frame, 1); // one batch
    put_u32(frame, 0);     // lane
    put_u64(frame, 0);     // ops_before
    put_u64(frame, 0);     // step
    put_varbyte(frame, claimed);
    frame.insert(frame.end(), 3, '\0');
    CHECK_THROWS_AS(decode_into(frame, back), ag::error);
    // The no_hold ids of its one batch.
    frame.clear();
    put_varbyte(frame, 1); // one batch
    put_u32(frame, 0);     // lane
    put_u64(frame, 0);     // ops_before
    put_u64(frame, 0);     // step
    put_varbyte(frame, 0); // no operators
    put_varbyte(frame, claimed);
    frame.insert(frame.end(), 3, '\0');
    CHECK_THROWS_AS(decode_into(frame, back), ag::error);
  }
}

TEST_CASE("a varbyte length that never ends is an error", "[ipc]") {
  wire::bytes frame;
  put_u32(frame, 1);
  put_u64(frame, 2);
  frame.insert(frame.end(), 40, static_cast<char>(0x80));
  wire::failed_msg back;
  CHECK_THROWS_AS(decode_into(frame, back), ag::error);
}

TEST_CASE("an execute message with an operator of a bad kind is an error naming it", "[ipc]") {
  for (int kind : {200, static_cast<int>(ag::op_kind_count), static_cast<int>(op_kind::upload)}) {
    INFO("kind " << kind);
    auto msg = sample_execute();
    msg.batches[1].ops[2].kind = static_cast<op_kind>(kind);
    const auto bytes = wire::encode(msg);
    wire::execute_msg back;
    CHECK_THROWS_WITH(decode_into(bytes, back),
                      Catch::Contains("lane 1") && Catch::Contains("kind " + std::to_string(kind)));
  }
}

TEST_CASE("a ready message or start-up arguments with a bad device are an error", "[ipc]") {
  const auto bad_kind = ag::device{static_cast<ag::device::kind>(3), 0};
  const auto bad_index = ag::device{ag::device::kind::sim, -1};
  SECTION("ready, unknown device kind") {
    wire::ready_msg msg{0, bad_kind, 1};
    const auto bytes = wire::encode(msg);
    wire::ready_msg back;
    CHECK_THROWS_WITH(decode_into(bytes, back), Catch::Contains("bad device (kind 3"));
  }
  SECTION("ready, negative device index") {
    wire::ready_msg msg{0, bad_index, 1};
    const auto bytes = wire::encode(msg);
    wire::ready_msg back;
    CHECK_THROWS_WITH(decode_into(bytes, back), Catch::Contains("index -1"));
  }
  SECTION("startup_args, unknown device kind 200") {
    auto args = sample_args();
    args.where = ag::device{static_cast<ag::device::kind>(200), 0};
    const auto bytes = wire::encode(args);
    wire::startup_args back;
    CHECK_THROWS_WITH(decode_into(bytes, back), Catch::Contains("bad device (kind 200"));
  }
  SECTION("startup_args, negative device index") {
    auto args = sample_args();
    args.where = bad_index;
    const auto bytes = wire::encode(args);
    wire::startup_args back;
    CHECK_THROWS_AS(decode_into(bytes, back), ag::error);
  }
}

TEST_CASE("start-up arguments of another version are an error naming it", "[ipc]") {
  auto args = sample_args();
  args.version = wire::version + 1;
  const auto bytes = wire::encode(args);
  wire::startup_args back;
  CHECK_THROWS_WITH(decode_into(bytes, back),
                    Catch::Contains("version " + std::to_string(wire::version + 1)));
}

TEST_CASE("random bytes either decode or are an ag::error, for every decoder", "[ipc]") {
  std::mt19937 rng{20240611};
  std::uniform_int_distribution<int> length(0, 200);
  std::uniform_int_distribution<int> byte(0, 255);
  std::size_t decoded = 0;
  std::size_t refused = 0;
  const auto feed = [&](auto&& decode) {
    try {
      decode();
      ++decoded;
    } catch (const ag::error&) {
      ++refused;
    }
  };
  for (int i = 0; i < 2000; ++i) {
    wire::bytes b(static_cast<std::size_t>(length(rng)));
    for (auto& c : b)
      c = static_cast<char>(byte(rng));
    // Every other string starts like a valid message, so decoders get past their first fields.
    if (i % 2 == 1 && b.size() > 4) {
      b[0] = static_cast<char>(byte(rng) % 4);
      b[1] = 0;
    }
    INFO("string " << i << " of " << b.size() << " bytes");
    try {
      feed([&] { decode_fresh<wire::startup_args>(b); });
      feed([&] { decode_fresh<wire::execute_msg>(b); });
      feed([&] { decode_fresh<wire::ready_msg>(b); });
      feed([&] { decode_fresh<wire::done_msg>(b); });
      feed([&] { decode_fresh<wire::failed_msg>(b); });
      feed([&] { (void)wire::decode_header(b.data(), b.size()); });
    } catch (const std::exception& e) {
      FAIL("an exception other than ag::error: " << e.what());
    }
  }
  CHECK(decoded + refused == 2000 * 6);
  CHECK(refused > 0);
}
