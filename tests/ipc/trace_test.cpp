// Tests of ipc/trace: what trace::writer records reads back field for field, concurrent writers
// never tear a record, and every damaged or meaningless trace (truncated anywhere, any byte or bit
// flipped, a record that checksums but names a lane or store range that does not exist) is an
// ag::error naming the trace, the record and what was wrong, never a crash and never a success.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <boost/crc.hpp>

#include <unistd.h>

#include "actorgraph/device.hpp"
#include "actorgraph/error.hpp"
#include "graph/op.hpp"
#include "ipc/trace.hpp"
#include "ipc/wire.hpp"
#include "tests/temp_files.hpp"

using ag::device;
using Catch::Matchers::Contains;
namespace trace = ag::trace;
namespace wire = ag::wire;

using ag::test::slurp;
using ag::test::spit;
using ag::test::temp_dir;

namespace {

std::vector<char> chars(const std::string& s) { return {s.begin(), s.end()}; }

const std::string trace_name = "t.agtrace";

// A trace built record by record with encode_record, and where each record starts.
struct built {
  std::vector<char> bytes;
  std::vector<std::size_t> at;

  // The prefix of parse's message about record i.
  std::string about(std::size_t i) const {
    const std::size_t where = i < at.size() ? at[i] : bytes.size();
    return "trace " + trace_name + ": record " + std::to_string(i) + " at byte "
           + std::to_string(where) + ": ";
  }
};

built build(const std::vector<trace::payload>& records) {
  built out;
  out.bytes = trace::file_header();
  for (std::size_t i = 0; i < records.size(); ++i) {
    out.at.push_back(out.bytes.size());
    const auto rec = trace::encode_record(records[i], 1000 + static_cast<int64_t>(i));
    out.bytes.insert(out.bytes.end(), rec.begin(), rec.end());
  }
  return out;
}

// parse's message for bytes, or empty when it accepted them. Anything but ag::error escapes and
// fails the test.
std::string refusal(const std::vector<char>& bytes) {
  try {
    trace::parse(bytes.data(), bytes.size(), trace_name);
  } catch (const ag::error& e) {
    return e.what();
  }
  return {};
}

// Puts the CRC-32 of a record's header and payload into its last four bytes, as a writer would.
void reseal(std::vector<char>& record) {
  REQUIRE(record.size() >= trace::record_header_size + trace::record_trailer_size);
  boost::crc_32_type crc;
  crc.process_bytes(record.data(), record.size() - trace::record_trailer_size);
  const uint32_t sum = crc.checksum();
  std::memcpy(record.data() + record.size() - trace::record_trailer_size, &sum, sizeof sum);
}

trace::begin_rec three_lanes(uint64_t store_bytes = 1 << 20) {
  trace::begin_rec b;
  b.process = true;
  b.lanes = {device::cpu(), device::sim(0), device::sim(1)};
  b.store_bytes = store_bytes;
  return b;
}

ag::op_desc fill_op(ag::operand_id out, uint64_t offset, uint64_t count, float scalar) {
  ag::op_desc op;
  op.kind = ag::op_kind::fill;
  op.out = {out, offset};
  op.count = count;
  op.scalar = scalar;
  return op;
}

ag::op_desc add_op(ag::operand_id out, ag::operand_id a, ag::operand_id b, uint64_t count) {
  ag::op_desc op;
  op.kind = ag::op_kind::add;
  op.out = {out, ag::operand_ref::no_offset};
  op.a = {a, ag::operand_ref::no_offset};
  op.b = {b, ag::operand_ref::no_offset};
  op.count = count;
  return op;
}

ag::batch batch_of(uint32_t lane, uint64_t ops_before, std::vector<ag::op_desc> ops,
                   std::vector<ag::operand_id> no_hold) {
  ag::batch b;
  b.lane = lane;
  b.ops_before = ops_before;
  b.ops = std::move(ops);
  b.no_hold = std::move(no_hold);
  return b;
}

void check_same(const ag::operand_ref& x, const ag::operand_ref& y) {
  CHECK(x.id == y.id);
  CHECK(x.offset == y.offset);
}

void check_same(const ag::batch& x, const ag::batch& y) {
  CHECK(x.lane == y.lane);
  CHECK(x.ops_before == y.ops_before);
  REQUIRE(x.ops.size() == y.ops.size());
  for (std::size_t i = 0; i < x.ops.size(); ++i) {
    INFO("op " << i);
    CHECK(x.ops[i].kind == y.ops[i].kind);
    check_same(x.ops[i].out, y.ops[i].out);
    check_same(x.ops[i].a, y.ops[i].a);
    check_same(x.ops[i].b, y.ops[i].b);
    CHECK(x.ops[i].count == y.ops[i].count);
    CHECK(x.ops[i].m == y.ops[i].m);
    CHECK(x.ops[i].k == y.ops[i].k);
    CHECK(x.ops[i].n == y.ops[i].n);
    CHECK(std::memcmp(&x.ops[i].scalar, &y.ops[i].scalar, sizeof(double)) == 0);
    CHECK(x.ops[i].type == y.ops[i].type);
    CHECK(x.ops[i].layout.strides == y.ops[i].layout.strides);
  }
  CHECK(x.no_hold == y.no_hold);
}

// A small valid trace: begin, store_write, local, execute frame, done ack, end.
built small_trace() {
  wire::execute_msg exec;
  exec.batches = {batch_of(1, 0, {fill_op(9, ag::operand_ref::no_offset, 4, 1.0f)}, {})};
  wire::done_msg done{1, 1, 16};
  return build({three_lanes(4096), trace::store_write_rec{5, 64, chars("abcdefgh")},
                trace::local_rec{batch_of(0, 0, {fill_op(7, 128, 4, 2.5f)}, {})},
                trace::frame_rec{1, wire::msg_type::execute, wire::encode(exec)},
                trace::ack_rec{1, wire::msg_type::done, wire::encode(done)}, trace::end_rec{5}});
}

} // namespace

TEST_CASE("a trace written with every record kind reads back record for record", "[ipc]") {
  temp_dir dir{"trace-test"};
  const auto path = dir.file("all.agtrace");

  const auto begin = three_lanes();
  trace::startup_rec startup;
  startup.lane = 1;
  startup.args.pub_endpoint = "ipc:///tmp/ag/pub";
  startup.args.pull_endpoint = "ipc:///tmp/ag/pull";
  startup.args.where = device::sim(0);
  startup.args.lane = 1;
  startup.args.store_name = "/ag-store-1";
  startup.args.store_bytes = begin.store_bytes;
  startup.args.parent_pid = 4321;
  startup.args.timeline_part = "/tmp/ag/timeline.1";
  const trace::store_write_rec store_write{5, 64, chars("sixteen bytes!!!")};
  const auto local_batch = batch_of(0, 3, {fill_op(7, 128, 4, -0.0f), fill_op(8, 256, 2, 7.5f)}, {5});
  wire::execute_msg exec;
  exec.batches = {batch_of(1, 0, {fill_op(11, ag::operand_ref::no_offset, 8, 1.0f)}, {}),
                  batch_of(2, 4, {add_op(12, 13, 14, 8)}, {13, 14})};
  const auto exec_body = wire::encode(exec);
  wire::ready_msg ready{1, device::sim(0), 1234};
  wire::done_msg done{2, 5, 4096};
  wire::failed_msg failed{1, 2, "sim:0 ran out of memory"};
  wire::received_msg received{2, 1};
  const std::vector<trace::ack_rec> acks = {
    {1, wire::msg_type::ready, wire::encode(ready)},
    {2, wire::msg_type::done, wire::encode(done)},
    {1, wire::msg_type::failed, wire::encode(failed)},
    {2, wire::msg_type::received, wire::encode(received)},
  };
  const trace::read_rec read{7, 128, chars("0123456789abcdef")};
  trace::live_rec live;
  live.operands = {{7, 0, 128, 16}, {12, 2, ag::operand_ref::no_offset, 32}};

  trace::writer w{path};
  CHECK(w.path() == path);
  w.write(begin);
  w.write(startup);
  w.write(store_write);
  w.write(trace::local_rec{local_batch});
  w.write(trace::frame_rec{1, wire::msg_type::execute, exec_body});
  w.write(trace::frame_rec{2, wire::msg_type::hello, {}});
  for (const auto& a : acks)
    w.write(a);
  w.write(read);
  w.write(live);
  REQUIRE(w.close() == "");

  const auto f = trace::read_file(path);
  using rt = trace::record_type;
  const std::vector<rt> kinds = {rt::begin, rt::startup, rt::store_write, rt::local,
                                 rt::frame, rt::frame,   rt::ack,         rt::ack,
                                 rt::ack,   rt::ack,     rt::read,        rt::live,
                                 rt::end};
  REQUIRE(f.records.size() == kinds.size());
  std::size_t expected_at = trace::file_header_size;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    INFO("record " << i << " (" << trace::to_string(f.records[i].type()) << ")");
    CHECK(f.records[i].type() == kinds[i]);
    CHECK(f.records[i].index == i);
    CHECK(f.records[i].at_byte == expected_at);
    if (i > 0)
      CHECK(f.records[i].time_ns >= f.records[i - 1].time_ns);
    expected_at += trace::encode_record(f.records[i].body, 0).size();
  }
  CHECK(expected_at == slurp(path).size());

  CHECK(f.begin.wire_version == wire::version);
  CHECK(f.begin.process);
  CHECK(f.begin.lanes == begin.lanes);
  CHECK(f.begin.store_bytes == begin.store_bytes);
  const auto& b0 = std::get<trace::begin_rec>(f.records[0].body);
  CHECK(b0.lanes == begin.lanes);
  CHECK(b0.store_bytes == begin.store_bytes);

  const auto& s = std::get<trace::startup_rec>(f.records[1].body);
  CHECK(s.lane == 1);
  CHECK(s.args.version == wire::version);
  CHECK(s.args.pub_endpoint == startup.args.pub_endpoint);
  CHECK(s.args.pull_endpoint == startup.args.pull_endpoint);
  CHECK(s.args.where == device::sim(0));
  CHECK(s.args.lane == 1);
  CHECK(s.args.store_name == startup.args.store_name);
  CHECK(s.args.store_bytes == startup.args.store_bytes);
  CHECK(s.args.parent_pid == 4321);
  CHECK(s.args.timeline_part == startup.args.timeline_part);

  const auto& sw = std::get<trace::store_write_rec>(f.records[2].body);
  CHECK(sw.id == 5);
  CHECK(sw.offset == 64);
  CHECK(sw.data == store_write.data);

  check_same(std::get<trace::local_rec>(f.records[3].body).b, local_batch);

  const auto& fe = std::get<trace::frame_rec>(f.records[4].body);
  CHECK(fe.id == 1);
  CHECK(fe.type == wire::msg_type::execute);
  CHECK(fe.body == exec_body);
  wire::execute_msg exec_back;
  wire::decode(fe.body.data(), fe.body.size(), exec_back);
  REQUIRE(exec_back.batches.size() == 2);
  check_same(exec_back.batches[0], exec.batches[0]);
  check_same(exec_back.batches[1], exec.batches[1]);

  const auto& fh = std::get<trace::frame_rec>(f.records[5].body);
  CHECK(fh.id == 2);
  CHECK(fh.type == wire::msg_type::hello);
  CHECK(fh.body.empty());

  for (std::size_t i = 0; i < acks.size(); ++i) {
    INFO("ack " << i);
    const auto& a = std::get<trace::ack_rec>(f.records[6 + i].body);
    CHECK(a.lane == acks[i].lane);
    CHECK(a.type == acks[i].type);
    CHECK(a.body == acks[i].body);
  }
  wire::ready_msg ready_back;
  const auto& ready_body = std::get<trace::ack_rec>(f.records[6].body).body;
  wire::decode(ready_body.data(), ready_body.size(), ready_back);
  CHECK(ready_back.lane == 1);
  CHECK(ready_back.where == device::sim(0));
  CHECK(ready_back.pid == 1234);
  wire::failed_msg failed_back;
  const auto& failed_body = std::get<trace::ack_rec>(f.records[8].body).body;
  wire::decode(failed_body.data(), failed_body.size(), failed_back);
  CHECK(failed_back.index == 2);
  CHECK(failed_back.what == failed.what);

  const auto& r = std::get<trace::read_rec>(f.records[10].body);
  CHECK(r.id == 7);
  CHECK(r.offset == 128);
  CHECK(r.data == read.data);

  const auto& l = std::get<trace::live_rec>(f.records[11].body);
  REQUIRE(l.operands.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    INFO("live operand " << i);
    CHECK(l.operands[i].id == live.operands[i].id);
    CHECK(l.operands[i].lane == live.operands[i].lane);
    CHECK(l.operands[i].offset == live.operands[i].offset);
    CHECK(l.operands[i].bytes == live.operands[i].bytes);
  }

  CHECK(std::get<trace::end_rec>(f.records[12].body).records == 12);
}

TEST_CASE("a writer closed in order reports nothing and a second close adds nothing", "[ipc]") {
  temp_dir dir{"trace-test"};
  const auto path = dir.file("closed.agtrace");
  trace::writer w{path};
  w.write(three_lanes());
  CHECK(w.close().empty());
  const auto size = slurp(path).size();
  CHECK(w.close().empty());
  w.write(trace::store_write_rec{1, 0, chars("late")}); // after close: dropped, not a crash
  CHECK(slurp(path).size() == size);
  const auto f = trace::read_file(path);
  REQUIRE(f.records.size() == 2);
  CHECK(std::get<trace::end_rec>(f.records[1].body).records == 1);
}

TEST_CASE("a writer on a path in a missing directory throws an error naming the path", "[ipc]") {
  temp_dir dir{"trace-test"};
  const auto path = dir.file("no-such-dir/t.agtrace");
  CHECK_THROWS_AS(trace::writer{path}, ag::error);
  CHECK_THROWS_WITH(trace::writer{path}, Contains("trace " + path + ": cannot create"));
  CHECK_FALSE(std::filesystem::exists(dir.file("no-such-dir")));
}

TEST_CASE("read_file names the path of a trace that is missing or not a trace", "[ipc]") {
  temp_dir dir{"trace-test"};
  const auto missing = dir.file("missing.agtrace");
  CHECK_THROWS_WITH(trace::read_file(missing), Contains("trace " + missing + ": cannot open"));
  const auto junk = dir.file("junk.agtrace");
  spit(junk, chars("this is not a trace at all, just text"));
  CHECK_THROWS_AS(trace::read_file(junk), ag::error);
  CHECK_THROWS_WITH(trace::read_file(junk), Contains("trace " + junk + ": ")
                                              && Contains("AGTRACE"));
}

TEST_CASE("four threads writing at once lose no record and tear none", "[ipc]") {
  temp_dir dir{"trace-test"};
  const auto path = dir.file("threads.agtrace");
  constexpr int threads = 4;
  constexpr int per_thread = 500;
  trace::writer w{path};
  w.write(three_lanes());
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&w, t] {
      for (int i = 0; i < per_thread; ++i) {
        // Payloads of different sizes, so that a torn record would not line up by chance.
        const auto id = static_cast<ag::operand_id>(t * 100000 + i);
        w.write(trace::store_write_rec{id, static_cast<uint64_t>(i),
                                       std::vector<char>(static_cast<std::size_t>(1 + i % 37),
                                                         static_cast<char>('a' + t))});
      }
    });
  for (auto& th : workers)
    th.join();
  REQUIRE(w.close().empty());

  const auto f = trace::read_file(path);
  REQUIRE(f.records.size() == 1 + threads * per_thread + 1);
  CHECK(std::get<trace::end_rec>(f.records.back().body).records == 1 + threads * per_thread);
  std::set<ag::operand_id> seen;
  std::vector<int> next(threads, 0);
  for (std::size_t i = 1; i + 1 < f.records.size(); ++i) {
    INFO("record " << i);
    const auto& s = std::get<trace::store_write_rec>(f.records[i].body);
    const int t = static_cast<int>(s.id / 100000);
    const int n = static_cast<int>(s.id % 100000);
    REQUIRE(t < threads);
    CHECK(n == next[t]++); // each thread's records in the order it wrote them
    CHECK(s.offset == static_cast<uint64_t>(n));
    CHECK(s.data == std::vector<char>(static_cast<std::size_t>(1 + n % 37),
                                      static_cast<char>('a' + t)));
    CHECK(seen.insert(s.id).second);
    CHECK(f.records[i].time_ns >= f.records[i - 1].time_ns);
  }
  CHECK(seen.size() == threads * per_thread);
}

TEST_CASE("a trace cut at any byte is refused with a message saying it is truncated", "[ipc]") {
  const auto t = small_trace();
  REQUIRE(refusal(t.bytes).empty());
  for (std::size_t len = 0; len < t.bytes.size(); ++len) {
    INFO("cut to " << len << " of " << t.bytes.size() << " bytes");
    const std::vector<char> cut(t.bytes.begin(), t.bytes.begin() + static_cast<std::ptrdiff_t>(len));
    const auto why = refusal(cut);
    CHECK_THAT(why, Contains("trace " + trace_name + ": "));
    if (len < trace::file_header_size) {
      CHECK_THAT(why, Contains("no AGTRACE header"));
    } else if (len == trace::file_header_size) {
      CHECK_THAT(why, Contains("no records"));
    } else {
      CHECK_THAT(why, Contains("truncated"));
      bool on_boundary = false;
      for (std::size_t i = 0; i < t.at.size(); ++i)
        if (t.at[i] == len) {
          on_boundary = true;
          CHECK_THAT(why, Contains(t.about(i)) && Contains("without an end record"));
        }
      if (!on_boundary)
        CHECK_THAT(why, Contains(": record ") && Contains(" at byte "));
    }
  }

  // read_file names the file it read.
  temp_dir dir{"trace-test"};
  const auto path = dir.file("cut.agtrace");
  spit(path, std::vector<char>(t.bytes.begin(), t.bytes.end() - 1));
  CHECK_THROWS_WITH(trace::read_file(path),
                    Contains("trace " + path + ": record 5 at byte " + std::to_string(t.at[5]))
                      && Contains("truncated"));
}

TEST_CASE("a trace with any byte inverted is refused, never read as valid", "[ipc]") {
  const auto t = small_trace();
  REQUIRE(refusal(t.bytes).empty());
  for (std::size_t i = 0; i < t.bytes.size(); ++i) {
    INFO("byte " << i << " inverted");
    auto bad = t.bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0xff);
    const auto why = refusal(bad);
    CHECK_THAT(why, Contains("trace " + trace_name + ": "));
    if (i < 8) {
      CHECK_THAT(why, Contains("AGTRACE"));
    } else if (i < 12) {
      CHECK_THAT(why, Contains("format version"));
    } else if (i < trace::file_header_size) {
      CHECK_THAT(why, Contains("reserved header bytes"));
    } else {
      std::size_t rec = 0;
      while (rec + 1 < t.at.size() && t.at[rec + 1] <= i)
        ++rec;
      CHECK_THAT(why, Contains(t.about(rec)));
    }
  }
}

TEST_CASE("a trace with any single bit flipped is refused, never read as valid", "[ipc]") {
  const auto t = small_trace();
  for (std::size_t i = 0; i < t.bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      INFO("byte " << i << " bit " << bit);
      auto bad = t.bytes;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      CHECK_THAT(refusal(bad), Contains("trace " + trace_name + ": "));
    }
  }
}

TEST_CASE("a damaged record is refused as a checksum mismatch", "[ipc]") {
  auto t = small_trace();
  t.bytes[t.at[2] + trace::record_header_size] ^= 0x01; // first payload byte of record 2
  CHECK_THAT(refusal(t.bytes), Contains(t.about(2) + "checksum mismatch"));
}

TEST_CASE("records that checksum but make no sense are refused naming the record", "[ipc]") {
  const auto begin = three_lanes(1024);
  const trace::store_write_rec fine_write{1, 0, chars("ok")};

  SECTION("a local batch for a lane that does not exist") {
    const auto t = build({begin, fine_write, trace::local_rec{batch_of(3, 0, {}, {})},
                          trace::end_rec{3}});
    CHECK_THAT(refusal(t.bytes),
               Contains(t.about(2) + "local: lane 3 does not exist (the trace has 3 lanes)"));
  }
  SECTION("an execute frame with a batch for a lane that does not exist") {
    wire::execute_msg m;
    m.batches = {batch_of(1, 0, {}, {}), batch_of(7, 0, {}, {})};
    const auto t = build({begin, trace::frame_rec{1, wire::msg_type::execute, wire::encode(m)},
                          trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "frame: execute frame: lane 7"));
  }
  SECTION("a local batch with an upload operator") {
    ag::op_desc up;
    up.kind = ag::op_kind::upload;
    const auto t = build({begin, trace::local_rec{batch_of(0, 0, {up}, {})}, trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "local: an operator of kind"));
  }
  SECTION("a store write that runs past the end of the store") {
    const auto t = build({begin, trace::store_write_rec{1, 1020, chars("12345678")},
                          trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes),
               Contains(t.about(1) + "store_write: store write [1020, +8) lies outside the "
                                     "1024-byte store"));
  }
  SECTION("a store write whose offset would wrap around") {
    const auto t = build({begin, trace::store_write_rec{1, UINT64_MAX - 1, chars("12345678")},
                          trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "store_write: store write"));
  }
  SECTION("a read outside the store") {
    const auto t = build({begin, trace::read_rec{1, 2048, chars("x")}, trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "read: read [2048, +1) lies outside"));
  }
  SECTION("a live operand on a lane that does not exist") {
    trace::live_rec live;
    live.operands = {{4, 9, ag::operand_ref::no_offset, 8}};
    const auto t = build({begin, live, trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "live: live operand #4: lane 9"));
  }
  SECTION("start-up arguments that name another device than their lane") {
    trace::startup_rec s;
    s.lane = 2;
    s.args.where = device::sim(0); // lane 2 is sim:1
    const auto t = build({begin, s, trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes),
               Contains(t.about(1) + "startup: start-up arguments of lane 2 name sim:0"));
  }
  SECTION("an acknowledgement of type execute") {
    wire::execute_msg m;
    const auto t = build({begin, trace::ack_rec{1, wire::msg_type::execute, wire::encode(m)},
                          trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "ack: an acknowledgement of type execute"));
  }
  SECTION("a done acknowledgement of another lane than its record's") {
    wire::done_msg d{2, 1, 0};
    const auto t = build({begin, trace::ack_rec{1, wire::msg_type::done, wire::encode(d)},
                          trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "ack: done of lane 2"));
  }
  SECTION("an acknowledgement whose body does not decode") {
    const auto t = build({begin, trace::ack_rec{1, wire::msg_type::ready, chars("xy")},
                          trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "ack: "));
  }
  SECTION("a frame of type done") {
    wire::done_msg d{1, 1, 0};
    const auto t = build({begin, trace::frame_rec{3, wire::msg_type::done, wire::encode(d)},
                          trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes),
               Contains(t.about(1) + "frame: a frame of type done, which children send"));
  }
  SECTION("a hello frame with a body") {
    const auto t = build({begin, trace::frame_rec{0, wire::msg_type::hello, chars("x")},
                          trace::end_rec{2}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "frame: hello frame with a body"));
  }
  SECTION("a begin whose lane 0 is not the cpu") {
    auto b = begin;
    b.lanes = {device::sim(0), device::cpu()};
    const auto t = build({b, trace::end_rec{1}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(0) + "lane 0 is not the cpu"));
  }
  SECTION("a begin with no lanes") {
    auto b = begin;
    b.lanes.clear();
    const auto t = build({b, trace::end_rec{1}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(0) + "lane 0 is not the cpu"));
  }
  SECTION("a begin with a second cpu lane") {
    auto b = begin;
    b.lanes = {device::cpu(), device::sim(0), device::cpu()};
    const auto t = build({b, trace::end_rec{1}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(0) + "lane 2 is a second cpu"));
  }
  SECTION("a second begin") {
    const auto t = build({begin, fine_write, begin, trace::end_rec{3}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(2) + "begin: a second begin record"));
  }
  SECTION("a first record that is not begin") {
    const auto t = build({fine_write, trace::end_rec{1}});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(0) + "the first record is store_write, not begin"));
  }
  SECTION("a record after the end record") {
    const auto t = build({begin, trace::end_rec{1}, fine_write});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(2) + "data after the end record"));
  }
  SECTION("a missing end record") {
    const auto t = build({begin, fine_write});
    CHECK_THAT(refusal(t.bytes), Contains(t.about(2) + "the trace ends without an end record"));
  }
  SECTION("a begin of another wire protocol version") {
    auto b = begin;
    b.wire_version = wire::version + 1;
    const auto t = build({b, trace::end_rec{1}});
    CHECK_THAT(refusal(t.bytes),
               Contains(t.about(0) + "recorded with wire protocol version "
                        + std::to_string(wire::version + 1) + "; this build speaks "
                        + std::to_string(wire::version)));
  }
  SECTION("an end record that counts the wrong number of records") {
    const auto t = build({begin, fine_write, trace::end_rec{5}});
    CHECK_THAT(refusal(t.bytes),
               Contains(t.about(2) + "the end record counts 5 records before it, the file has 2"));
  }
  SECTION("a record of an unknown type") {
    auto t = build({begin});
    auto odd = trace::encode_record(fine_write, 7);
    odd[0] = 42;
    reseal(odd);
    t.at.push_back(t.bytes.size());
    t.bytes.insert(t.bytes.end(), odd.begin(), odd.end());
    const auto end = trace::encode_record(trace::end_rec{2}, 8);
    t.bytes.insert(t.bytes.end(), end.begin(), end.end());
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "unknown record type 42"));
  }
  SECTION("a record of type zero") {
    auto t = build({begin});
    auto odd = trace::encode_record(fine_write, 7);
    odd[0] = 0;
    reseal(odd);
    t.at.push_back(t.bytes.size());
    t.bytes.insert(t.bytes.end(), odd.begin(), odd.end());
    CHECK_THAT(refusal(t.bytes), Contains(t.about(1) + "unknown record type 0"));
  }
  SECTION("a payload with trailing bytes") {
    auto t = build({begin});
    auto rec = trace::encode_record(fine_write, 7);
    // One more payload byte: the length grows by one and the CRC moves along.
    rec.insert(rec.end() - trace::record_trailer_size, 'z');
    uint32_t length = 0;
    std::memcpy(&length, rec.data() + 4, sizeof length);
    ++length;
    std::memcpy(rec.data() + 4, &length, sizeof length);
    reseal(rec);
    t.at.push_back(t.bytes.size());
    t.bytes.insert(t.bytes.end(), rec.begin(), rec.end());
    CHECK_THAT(refusal(t.bytes),
               Contains(t.about(1) + "malformed store_write record: 1 trailing bytes"));
  }
  SECTION("a file header of another format version") {
    auto t = build({begin, trace::end_rec{1}});
    t.bytes[8] = 1; // the format before dtypes and layouts
    CHECK_THAT(refusal(t.bytes), Contains("trace " + trace_name
                                          + ": format version 1; this build reads version 2"));
  }
}

TEST_CASE("a 100 KB store write round-trips byte for byte", "[ipc]") {
  temp_dir dir{"trace-test"};
  const auto path = dir.file("big.agtrace");
  std::vector<char> data(100 * 1024);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<char>((i * 131 + 7) % 251);
  trace::writer w{path};
  w.write(three_lanes(1 << 20));
  w.write(trace::store_write_rec{3, 4096, data});
  REQUIRE(w.close().empty());
  const auto f = trace::read_file(path);
  REQUIRE(f.records.size() == 3);
  const auto& s = std::get<trace::store_write_rec>(f.records[1].body);
  CHECK(s.id == 3);
  CHECK(s.offset == 4096);
  CHECK(s.data == data);
}

TEST_CASE("lengths larger than the file are refused at once, without allocating them", "[ipc]") {
  const auto begin = three_lanes(1024);

  SECTION("a record length beyond the end of the file") {
    auto t = build({begin, trace::store_write_rec{1, 0, chars("abc")}, trace::end_rec{2}});
    const uint32_t huge = 0xfffffff0u;
    std::memcpy(t.bytes.data() + t.at[1] + 4, &huge, sizeof huge);
    const auto start = std::chrono::steady_clock::now();
    const auto why = refusal(t.bytes);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
    CHECK_THAT(why, Contains(t.about(1) + "a payload of 4294967280 bytes")
                      && Contains("(truncated)"));
  }
  SECTION("a sequence length inside a payload beyond the end of the record") {
    auto t = build({begin});
    auto rec = trace::encode_record(trace::store_write_rec{1, 0, chars("x")}, 7);
    // The payload is id (8 bytes), offset (8 bytes), then the data's varbyte length (here 1 byte,
    // 0x01) and the data; claim 127 bytes of data instead, still in one byte, with one left.
    const std::size_t length_at = trace::record_header_size + 16;
    REQUIRE(rec[length_at] == 1);
    rec[length_at] = static_cast<char>(0x7f);
    reseal(rec);
    t.at.push_back(t.bytes.size());
    t.bytes.insert(t.bytes.end(), rec.begin(), rec.end());
    const auto start = std::chrono::steady_clock::now();
    const auto why = refusal(t.bytes);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
    CHECK_THAT(why, Contains(t.about(1) + "malformed store_write record"));
  }
}

TEST_CASE("digest is 64-bit FNV-1a", "[ipc]") {
  CHECK(trace::digest(nullptr, 0) == 0xcbf29ce484222325ull);
  CHECK(trace::digest("a", 1) == 0xaf63dc4c8601ec8cull);
  CHECK(trace::digest("foobar", 6) == 0x85944171f73967e8ull);
  const std::vector<char> x = chars("same bytes"), y = chars("same bytes"), z = chars("same bytez");
  CHECK(trace::digest(x.data(), x.size()) == trace::digest(y.data(), y.size()));
  CHECK(trace::digest(x.data(), x.size()) != trace::digest(z.data(), z.size()));
}

TEST_CASE("record types have names and unknown ones a number", "[ipc]") {
  CHECK(trace::to_string(trace::record_type::begin) == "begin");
  CHECK(trace::to_string(trace::record_type::store_write) == "store_write");
  CHECK(trace::to_string(trace::record_type::end) == "end");
  CHECK(trace::to_string(static_cast<trace::record_type>(42)) == "type#42");
}
