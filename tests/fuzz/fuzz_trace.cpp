// libFuzzer target: a message trace as ag-replay reads it from a file (ipc/trace.cpp,
// apps/ag-replay): the whole input is one trace file, parsed and checked by ag::trace::parse.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "actorgraph/error.hpp"
#include "graph/op.hpp"
#include "ipc/trace.hpp"
#include "ipc/wire.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

namespace trace = ag::trace;
namespace wire = ag::wire;
namespace fuzz = ag::fuzz;

namespace {

// What parse promises about one record between begin and end, given the trace's begin.
class checker {
public:
  explicit checker(const trace::begin_rec& b) : begin_(b) {}

  void operator()(const trace::begin_rec&) const { fuzz::fail("trace: a second begin record"); }
  void operator()(const trace::end_rec&) const {
    fuzz::fail("trace: an end record before the last");
  }
  void operator()(const trace::startup_rec& x) const {
    lane(x.lane, "startup: lane out of range");
    fuzz::require(x.lane != ag::cpu_lane, "startup: arguments of the cpu lane");
    fuzz::require(x.args.where == begin_.lanes[x.lane], "startup: device is not its lane's");
    fuzz::sink = fuzz::sink + x.args.store_bytes + x.args.pub_endpoint.size();
  }
  void operator()(const trace::store_write_rec& x) const {
    range(x.offset, x.data.size(), "store_write: range outside the store");
    bytes_ += x.data.size();
  }
  void operator()(const trace::local_rec& x) const { batch(x.b, "local"); }
  void operator()(const trace::frame_rec& x) const {
    switch (x.type) {
      case wire::msg_type::hello:
      case wire::msg_type::destroy:
        fuzz::require(x.body.empty(), "frame: hello or destroy with a body");
        break;
      case wire::msg_type::execute: {
        wire::execute_msg m;
        wire::decode(x.body.data(), x.body.size(), m);
        for (const auto& b : m.batches)
          batch(b, "frame");
        break;
      }
      default: fuzz::fail("frame: a type only children send");
    }
    bytes_ += x.body.size();
  }
  void operator()(const trace::ack_rec& x) const {
    lane(x.lane, "ack: lane out of range");
    switch (x.type) {
      case wire::msg_type::ready: {
        wire::ready_msg m;
        wire::decode(x.body.data(), x.body.size(), m);
        fuzz::require(m.lane == x.lane, "ack: ready of another lane");
        fuzz::require(m.where == begin_.lanes[x.lane], "ack: ready of another device");
        break;
      }
      case wire::msg_type::done: {
        wire::done_msg m;
        wire::decode(x.body.data(), x.body.size(), m);
        fuzz::require(m.lane == x.lane, "ack: done of another lane");
        break;
      }
      case wire::msg_type::failed: {
        wire::failed_msg m;
        wire::decode(x.body.data(), x.body.size(), m);
        fuzz::require(m.lane == x.lane, "ack: failed of another lane");
        break;
      }
      case wire::msg_type::received: {
        wire::received_msg m;
        wire::decode(x.body.data(), x.body.size(), m);
        fuzz::require(m.lane == x.lane, "ack: received of another lane");
        break;
      }
      default: fuzz::fail("ack: a type runners do not send");
    }
    bytes_ += x.body.size();
  }
  void operator()(const trace::read_rec& x) const {
    range(x.offset, x.data.size(), "read: range outside the store");
    bytes_ += x.data.size();
  }
  void operator()(const trace::collective_rec& x) const {
    const auto& c = x.c;
    fuzz::require(static_cast<uint8_t>(c.kind) <= static_cast<uint8_t>(ag::collective_kind::reduce_scatter),
                  "collective: unknown kind");
    fuzz::require(!c.parts.empty() && c.parts.size() == c.from.size() && !c.outs.empty()
                    && c.outs.size() == c.to.size(),
                  "collective: inputs or results do not match their devices");
    for (const auto* devices : {&c.from, &c.to})
      for (const auto& d : *devices)
        fuzz::require(std::find(begin_.lanes.begin(), begin_.lanes.end(), d) != begin_.lanes.end(),
                      "collective: a device that is no lane");
    bytes_ += c.parts.size() + c.outs.size();
  }
  void operator()(const trace::live_rec& x) const {
    for (const auto& o : x.operands) {
      lane(o.lane, "live: lane out of range");
      if (o.lane == ag::cpu_lane)
        range(o.offset, o.bytes, "live: cpu operand outside the store");
    }
    bytes_ += x.operands.size();
  }

  // Bytes of data, bodies and operands decoded: each took at least one byte of the input.
  std::size_t bytes() const noexcept { return bytes_; }

private:
  void lane(uint32_t l, const char* what) const { fuzz::require(l < begin_.lanes.size(), what); }

  void range(uint64_t offset, uint64_t bytes, const char* what) const {
    fuzz::require(offset <= begin_.store_bytes && bytes <= begin_.store_bytes - offset, what);
  }

  void batch(const ag::batch& b, const char* record) const {
    if (b.lane >= begin_.lanes.size())
      fuzz::fail(std::string{record} + ": batch lane out of range");
    for (const auto& op : b.ops)
      if (static_cast<std::size_t>(op.kind) >= ag::op_kind_count || op.kind == ag::op_kind::upload)
        fuzz::fail(std::string{record} + ": a batch with an operator a runner does not execute");
    fuzz::sink = fuzz::sink + b.ops_before + b.ops.size() + b.no_hold.size();
  }

  const trace::begin_rec& begin_;
  mutable std::size_t bytes_ = 0;
};

void check_begin(const trace::begin_rec& b) {
  fuzz::require(b.wire_version == wire::version, "begin: other wire version accepted");
  fuzz::require(b.lanes.size() > ag::cpu_lane && b.lanes[ag::cpu_lane].is_cpu(),
                "begin: lane 0 is not the cpu");
  for (std::size_t i = 0; i < b.lanes.size(); ++i) {
    fuzz::require(fuzz::valid(b.lanes[i]), "begin: bad device accepted");
    fuzz::require(i == ag::cpu_lane || !b.lanes[i].is_cpu(), "begin: a second cpu lane");
  }
}

std::vector<char> encode(const trace::file& f) {
  auto out = trace::file_header();
  for (const auto& r : f.records) {
    const auto rec = trace::encode_record(r.body, r.time_ns);
    out.insert(out.end(), rec.begin(), rec.end());
  }
  return out;
}

// The records survive encode/parse/encode unchanged. The input may be non-canonical (longer
// varbytes than CAF writes, a bool stored as 2), so the first re-encoding is the reference, not the
// input; it is no longer than the input. An ag::error here is a bug: the records came out of parse.
void check_round_trip(const trace::file& f, std::size_t size) {
  try {
    const auto once = encode(f);
    if (once.size() > size)
      fuzz::fail("trace: re-encoding is " + std::to_string(once.size())
                 + " bytes, longer than the " + std::to_string(size) + "-byte input");
    const auto again = trace::parse(once.data(), once.size(), "fuzz re-encoding");
    if (again.records.size() != f.records.size())
      fuzz::fail("trace: re-parse has " + std::to_string(again.records.size()) + " records, not "
                 + std::to_string(f.records.size()));
    for (std::size_t i = 0; i < f.records.size(); ++i) {
      const auto& a = f.records[i];
      const auto& b = again.records[i];
      if (trace::encode_record(b.body, b.time_ns) != trace::encode_record(a.body, a.time_ns))
        fuzz::fail("trace: record " + std::to_string(i) + " changed in encode/parse/encode");
    }
  } catch (const ag::error& e) {
    fuzz::fail(std::string{"trace: parsed records do not round-trip: "} + e.what());
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  trace::file f;
  try {
    f = trace::parse(data, size, "fuzz input");
  } catch (const ag::error&) {
    // Malformed input, refused as parse promises. Anything else escapes and crashes.
    return 0;
  }
  // What parse promises about a whole trace.
  const auto& rs = f.records;
  fuzz::require(rs.size() >= 2, "trace: fewer than two records accepted");
  fuzz::require(rs.front().type() == trace::record_type::begin, "trace: first record is not begin");
  fuzz::require(rs.back().type() == trace::record_type::end, "trace: last record is not end");
  fuzz::require(std::get<trace::end_rec>(rs.back().body).records == rs.size() - 1,
                "trace: end record miscounts");
  check_begin(f.begin);
  fuzz::require(trace::encode_record(f.begin, 0)
                  == trace::encode_record(std::get<trace::begin_rec>(rs.front().body), 0),
                "trace: file.begin is not the begin record");
  const checker check{f.begin};
  for (std::size_t i = 0; i < rs.size(); ++i) {
    fuzz::require(rs[i].index == i, "trace: record indices are not 0..n-1");
    // Each record takes at least its header and trailer, and the next one starts after it.
    const uint64_t at = i == 0 ? trace::file_header_size
                               : rs[i - 1].at_byte + trace::record_header_size
                                   + trace::record_trailer_size;
    fuzz::require(i == 0 ? rs[i].at_byte == at : rs[i].at_byte >= at,
                  "trace: record offsets overlap");
    if (i == 0 || i + 1 == rs.size())
      continue;
    try {
      std::visit(check, rs[i].body);
    } catch (const ag::error& e) {
      fuzz::fail("trace: record " + std::to_string(i) + " has a frame or ack body that parse "
                 "accepted but does not decode: " + e.what());
    }
  }
  fuzz::require(rs.back().at_byte + trace::record_header_size + trace::record_trailer_size <= size,
                "trace: the end record lies beyond the input");
  fuzz::require(check.bytes() <= size, "trace: decoded data longer than the input");
  fuzz::sink =
    fuzz::sink + rs.size() + f.begin.store_bytes + static_cast<uint64_t>(rs.back().time_ns);
  check_round_trip(f, size);
  return 0;
}
