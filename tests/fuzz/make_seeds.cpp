// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/): valid messages and traces
// made with the real encoders, and a few broken ones near the decoders' edges. Run by hand after a
// change to the wire or trace format: make_seeds OUTDIR writes OUTDIR/pubsub, OUTDIR/pushpull,
// OUTDIR/startup and OUTDIR/trace.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <boost/crc.hpp>

#include "actorgraph/device.hpp"
#include "actorgraph/error.hpp"
#include "graph/op.hpp"
#include "ipc/trace.hpp"
#include "ipc/wire.hpp"

namespace fs = std::filesystem;
namespace trace = ag::trace;
namespace wire = ag::wire;
using ag::op_desc;
using ag::op_kind;
using ag::operand_ref;

namespace {

using bytes = wire::bytes;

class corpus {
public:
  explicit corpus(fs::path dir) : dir_(std::move(dir)) { fs::create_directories(dir_); }

  void write(const std::string& name, const bytes& data) {
    std::ofstream out(dir_ / name, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out)
      throw ag::error("cannot write " + (dir_ / name).string());
    ++count_;
    size_ += data.size();
  }

  void report() const {
    std::cout << dir_.string() << ": " << count_ << " files, " << size_ << " bytes\n";
  }

private:
  fs::path dir_;
  std::size_t count_ = 0;
  std::size_t size_ = 0;
};

bytes cat(bytes a, const bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bytes head(wire::msg_type t, uint64_t id) { return wire::encode_header({t, id}); }

template <class T>
bytes message(wire::msg_type t, uint64_t id, T body) {
  return cat(head(t, id), wire::encode(body));
}

bytes raw(std::initializer_list<unsigned> xs) {
  bytes out;
  for (auto x : xs)
    out.push_back(static_cast<char>(x));
  return out;
}

bytes without_last(bytes b) {
  b.pop_back();
  return b;
}

operand_ref dev(uint64_t id) { return {id, operand_ref::no_offset}; }
operand_ref host(uint64_t id, uint64_t offset) { return {id, offset}; }

op_desc op(op_kind kind, operand_ref out, operand_ref a = {}, operand_ref b = {}, uint64_t count = 4) {
  op_desc d;
  d.kind = kind;
  d.out = out;
  d.a = a;
  d.b = b;
  d.count = count;
  return d;
}

// One operator of every kind a runner executes, with the operands both on the device and in the
// store, and fill scalars that CAF's float encoder would mangle.
std::vector<op_desc> every_kind() {
  std::vector<op_desc> ops;
  auto fill = op(op_kind::fill, dev(10));
  fill.scalar = -0.0f;
  ops.push_back(fill);
  auto fill_nan = op(op_kind::fill, dev(11));
  fill_nan.scalar = std::numeric_limits<float>::quiet_NaN();
  ops.push_back(fill_nan);
  ops.push_back(op(op_kind::add, dev(12), dev(10), dev(11)));
  ops.push_back(op(op_kind::sub, dev(13), host(1, 0), dev(11)));
  ops.push_back(op(op_kind::mul, dev(14), dev(12), host(2, 4096)));
  ops.push_back(op(op_kind::div, dev(15), dev(13), dev(14)));
  auto mm = op(op_kind::matmul, dev(16), dev(12), dev(13), 6);
  mm.m = 2;
  mm.k = 2;
  mm.n = 3;
  ops.push_back(mm);
  ops.push_back(op(op_kind::relu, dev(17), dev(15)));
  ops.push_back(op(op_kind::sum, dev(18), dev(17), {}, 4));
  ops.push_back(op(op_kind::copy, host(19, 8192), dev(18), {}, 1));
  // The elementwise operators of the table, over every dtype: a broadcast with a layout, a scalar
  // operand, a comparison, a where and a cast.
  auto bias = op(op_kind::add, dev(20), dev(12), dev(11), 6);
  bias.type = bias.in_type = ag::dtype::bfloat16;
  bias.layout = {{2, 3}, {3, 1, 0, 1, 0, 0}, 0, 1, 0};
  ops.push_back(bias);
  auto half_scalar = op(op_kind::mul, dev(21), dev(20), {}, 6);
  half_scalar.type = half_scalar.in_type = ag::dtype::float16;
  half_scalar.scalar = 0.5;
  half_scalar.k = 1;
  ops.push_back(half_scalar);
  auto less = op(op_kind::lt, dev(22), dev(12), dev(13));
  less.type = ag::dtype::uint8;
  ops.push_back(less);
  auto pick = op(op_kind::where, dev(23), dev(22), dev(12));
  pick.in_type = ag::dtype::uint8;
  pick.c = dev(13);
  ops.push_back(pick);
  auto wide = op(op_kind::cast, dev(24), dev(23));
  wide.type = ag::dtype::int64;
  ops.push_back(wide);
  for (op_kind k : {op_kind::maximum, op_kind::minimum})
    ops.push_back(op(k, dev(25), dev(12), dev(13)));
  for (op_kind k : {op_kind::neg, op_kind::abs, op_kind::exp, op_kind::log, op_kind::sqrt,
                    op_kind::rsqrt, op_kind::tanh, op_kind::sigmoid, op_kind::silu, op_kind::gelu,
                    op_kind::clone})
    ops.push_back(op(k, dev(26), dev(12)));
  // The reductions, rows, index and random operators, and a batched matmul with a layout.
  for (op_kind k : {op_kind::reduce_sum, op_kind::reduce_mean, op_kind::reduce_max,
                    op_kind::argmax, op_kind::softmax, op_kind::log_softmax}) {
    auto r = op(k, dev(27), dev(12), {}, 2);
    r.m = 2;
    r.k = 2;
    r.n = 1;
    if (k == op_kind::argmax)
      r.type = ag::dtype::int64;
    if (k == op_kind::softmax || k == op_kind::log_softmax)
      r.count = 4;
    ops.push_back(r);
  }
  auto norm = op(op_kind::layer_norm, dev(28), dev(12), dev(13), 4);
  norm.c = dev(14);
  norm.m = 2;
  norm.k = 2;
  norm.scalar = 1e-5;
  ops.push_back(norm);
  auto embed = op(op_kind::embedding, dev(29), dev(12), dev(24), 4);
  embed.in_type = ag::dtype::int64;
  embed.m = 2;
  embed.k = 2;
  embed.n = 2;
  ops.push_back(embed);
  auto draw = op(op_kind::random, dev(30), {}, {}, 1000);
  draw.m = 42;
  draw.k = 1;
  draw.scalar = 0.0;
  draw.scalar2 = 1.0;
  ops.push_back(draw);
  auto batched = op(op_kind::matmul, dev(31), dev(12), dev(13), 8);
  batched.m = 2;
  batched.k = 2;
  batched.n = 2;
  batched.layout = {{2, 2, 2, 2}, {0, 2, 0, 1, 4, 0, 1, 2, 0, 0, 0, 0}, 0, 0, 0};
  ops.push_back(batched);
  return ops;
}

void pubsub(corpus& c) {
  using wire::msg_type;
  c.write("seed-hello", head(msg_type::hello, 1));
  c.write("seed-destroy", head(msg_type::destroy, 9));
  c.write("seed-hello-with-body", cat(head(msg_type::hello, 2), raw({1, 2, 3})));

  c.write("seed-execute-empty", message(msg_type::execute, 2, wire::execute_msg{}));
  c.write("seed-execute-every-kind",
          message(msg_type::execute, 3, wire::execute_msg{{ag::batch{1, 0, every_kind(), {}}}}));
  wire::execute_msg lanes;
  for (uint32_t lane = 1; lane <= 4; ++lane)
    lanes.batches.push_back(ag::batch{lane, 100 * lane,
                                      {op(op_kind::fill, dev(lane)),
                                       op(op_kind::relu, dev(lane + 10), dev(lane))},
                                      {lane, lane + 10, 1000 + lane}});
  c.write("seed-execute-lanes", message(msg_type::execute, 4, lanes));
  c.write("seed-execute-release-only",
          message(msg_type::execute, 5, wire::execute_msg{{ag::batch{2, 7, {}, {10, 11, 12}}}}));
  // Zero batches written as a two-byte varbyte: longer than CAF writes it, but a valid count.
  c.write("seed-execute-noncanonical-count", cat(head(msg_type::execute, 6), raw({0x80, 0x00})));

  const bytes one_fill =
    message(msg_type::execute, 7, wire::execute_msg{{ag::batch{1, 0, {op(op_kind::fill, dev(1))}, {}}}});
  c.write("broken-empty", {});
  c.write("broken-header-truncated", bytes(one_fill.begin(), one_fill.begin() + 10));
  auto bad_magic = one_fill;
  bad_magic[0] = 'X';
  c.write("broken-bad-magic", bad_magic);
  auto version2 = one_fill;
  version2[2] = wire::version + 1;
  c.write("broken-version-next", version2);
  auto reserved = one_fill;
  reserved[5] = 1;
  c.write("broken-reserved-nonzero", reserved);
  c.write("broken-type-99", cat(head(static_cast<msg_type>(99), 7), bytes(one_fill.begin() + 16,
                                                                          one_fill.end())));
  c.write("broken-execute-truncated", without_last(one_fill));
  c.write("broken-execute-trailing", cat(one_fill, raw({0})));
  c.write("broken-execute-huge-count", cat(head(msg_type::execute, 7), raw({0xff, 0xff, 0xff, 0xff, 0x0f})));
  c.write("broken-execute-six-byte-varbyte",
          cat(head(msg_type::execute, 7), raw({0xff, 0xff, 0xff, 0xff, 0xff, 0x01})));
  c.write("broken-execute-upload", message(msg_type::execute, 7,
                                           wire::execute_msg{{ag::batch{1, 0, {op(op_kind::upload, dev(1))}, {}}}}));
  c.write("broken-execute-kind-200",
          message(msg_type::execute, 7,
                  wire::execute_msg{{ag::batch{1, 0, {op(static_cast<op_kind>(200), dev(1))}, {}}}}));
  c.write("broken-ready-to-child", message(msg_type::ready, 1, wire::ready_msg{1, ag::device::sim(0), 42}));
}

void pushpull(corpus& c) {
  using wire::msg_type;
  c.write("seed-ready", message(msg_type::ready, 1, wire::ready_msg{1, ag::device::sim(0), 4242}));
  c.write("seed-ready-cuda", message(msg_type::ready, 1, wire::ready_msg{3, ag::device::cuda(2), 77}));
  c.write("seed-done", message(msg_type::done, 2, wire::done_msg{1, 3, 4096}));
  c.write("seed-failed-short",
          message(msg_type::failed, 3, wire::failed_msg{1, 2, "sim:0: division by zero"}));
  std::string long_what = "protocol error: ";
  while (long_what.size() < 2000)
    long_what += "wire: message gap: expected id 12, got 14 (execute); ";
  c.write("seed-failed-long", message(msg_type::failed, 4, wire::failed_msg{2, 0, long_what}));
  c.write("seed-failed-empty-what", message(msg_type::failed, 5, wire::failed_msg{1, 9, ""}));
  c.write("seed-received", message(msg_type::received, 6, wire::received_msg{1, 17}));

  const bytes done = message(msg_type::done, 2, wire::done_msg{1, 3, 4096});
  c.write("broken-empty", {});
  c.write("broken-header-truncated", bytes(done.begin(), done.begin() + 15));
  auto bad_magic = done;
  bad_magic[1] = 0;
  c.write("broken-bad-magic", bad_magic);
  auto version2 = done;
  version2[2] = wire::version + 1;
  c.write("broken-version-next", version2);
  c.write("broken-type-99", cat(head(static_cast<msg_type>(99), 2), bytes(done.begin() + 16, done.end())));
  c.write("broken-done-truncated", without_last(done));
  c.write("broken-done-trailing", cat(done, raw({0})));
  c.write("broken-ready-bad-device-kind",
          message(msg_type::ready, 1,
                  wire::ready_msg{1, ag::device{static_cast<ag::device::kind>(3), 0}, 1}));
  c.write("broken-ready-negative-index", message(msg_type::ready, 1, wire::ready_msg{1, ag::device::sim(-1), 1}));
  // failed_msg: lane u32, index u64, then the text's varbyte length.
  const bytes lane_index = raw({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2});
  c.write("broken-failed-huge-length",
          cat(head(msg_type::failed, 3), cat(lane_index, raw({0xff, 0xff, 0xff, 0xff, 0x0f, 'x'}))));
  c.write("broken-failed-length-beyond-frame",
          cat(head(msg_type::failed, 3), cat(lane_index, raw({100, 'a', 'b', 'c'}))));
  c.write("broken-execute-to-controller",
          message(msg_type::execute, 1, wire::execute_msg{{ag::batch{1, 0, {}, {1}}}}));
}

wire::startup_args typical_args() {
  wire::startup_args a;
  a.pub_endpoint = "ipc:///tmp/ag-Xy12Ab/pub";
  a.pull_endpoint = "ipc:///tmp/ag-Xy12Ab/pull";
  a.where = ag::device::sim(1);
  a.lane = 2;
  a.store_name = "/ag-4242-0123456789abcdef-store";
  a.store_bytes = uint64_t{1} << 30;
  a.parent_pid = 4242;
  return a;
}

void startup(corpus& c) {
  const auto typical = typical_args();
  auto plain = typical;
  c.write("seed-typical", wire::encode(plain));
  auto cuda = typical;
  cuda.where = ag::device::cuda(7);
  cuda.lane = 8;
  c.write("seed-cuda", wire::encode(cuda));
  auto long_names = typical;
  const std::string dir = "ipc:///" + std::string(900, 'd') + "/ag-Xy12Ab/";
  long_names.pub_endpoint = dir + "pub";
  long_names.pull_endpoint = dir + "pull";
  long_names.store_name = "/" + std::string(250, 's');
  c.write("seed-long-endpoints", wire::encode(long_names));
  auto empty_names = typical;
  empty_names.pub_endpoint.clear();
  empty_names.pull_endpoint.clear();
  empty_names.store_name.clear();
  c.write("seed-empty-strings", wire::encode(empty_names));

  auto t = typical;
  const bytes good = wire::encode(t);
  c.write("broken-empty", {});
  c.write("broken-truncated", without_last(good));
  c.write("broken-half", bytes(good.begin(), good.begin() + static_cast<long>(good.size() / 2)));
  c.write("broken-trailing", cat(good, raw({0})));
  auto v2 = typical;
  v2.version = wire::version + 1;
  c.write("broken-version-next", wire::encode(v2));
  auto bad_device = typical;
  bad_device.where = ag::device{static_cast<ag::device::kind>(9), 0};
  c.write("broken-bad-device", wire::encode(bad_device));
  // version u32, then pub_endpoint's varbyte length.
  c.write("broken-huge-length", cat(raw({0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}),
                                    bytes(good.begin() + 5, good.end())));
  c.write("broken-six-byte-varbyte", cat(raw({0, 0, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}),
                                         bytes(good.begin() + 5, good.end())));
}

// A trace file's bytes, built record by record with the real encoders; times are fixed so that the
// seeds are the same on every run.
class trace_bytes {
public:
  trace_bytes() : bytes_(trace::file_header()) {}

  trace_bytes& add(const trace::payload& body) {
    return add_raw(trace::encode_record(body, time()));
  }
  trace_bytes& add_raw(const bytes& record) {
    bytes_.insert(bytes_.end(), record.begin(), record.end());
    ++records_;
    return *this;
  }
  // The end record, counting the records before it.
  trace_bytes& end() { return add(trace::end_rec{records_}); }

  uint64_t records() const noexcept { return records_; }
  const bytes& get() const noexcept { return bytes_; }

private:
  int64_t time() const noexcept { return 1'000'000'000 + 1000 * static_cast<int64_t>(records_); }

  bytes bytes_;
  uint64_t records_ = 0;
};

// Recomputes a record's CRC-32 after its header or payload was changed, so that the decoder gets
// past the checksum to what was changed.
bytes reseal(bytes record) {
  const std::size_t body = record.size() - trace::record_trailer_size;
  boost::crc_32_type crc;
  crc.process_bytes(record.data(), body);
  const uint32_t sum = crc.checksum();
  std::memcpy(record.data() + body, &sum, sizeof sum);
  return record;
}

trace::begin_rec two_lanes(bool process) {
  trace::begin_rec b;
  b.process = process;
  b.lanes = {ag::device::cpu(), ag::device::sim(0)};
  b.store_bytes = 4096;
  return b;
}

trace::ack_rec ack(uint32_t lane, wire::msg_type t, bytes body) {
  return trace::ack_rec{lane, t, std::move(body)};
}

template <class T>
bytes encoded(T x) {
  return wire::encode(x);
}

// A thread-mode trace with a record of every kind but startup: the cpu lane's batches go as local
// records, sim:0's as execute frames.
trace_bytes thread_trace() {
  using wire::msg_type;
  trace_bytes t;
  t.add(two_lanes(false));
  t.add(trace::store_write_rec{1, 0, bytes(64, '\x3f')});
  t.add(trace::local_rec{ag::batch{0, 0,
                                   {op(op_kind::fill, host(2, 64), {}, {}, 16),
                                    op(op_kind::add, host(3, 128), host(1, 0), host(2, 64), 16)},
                                   {2}}});
  t.add(trace::frame_rec{1, msg_type::hello, {}});
  const std::vector<op_desc> sim_ops = {op(op_kind::copy, dev(4), host(3, 128), {}, 16),
                                        op(op_kind::relu, dev(5), dev(4), {}, 16)};
  t.add(trace::frame_rec{2, msg_type::execute,
                         encoded(wire::execute_msg{{ag::batch{1, 0, sim_ops, {4}}}})});
  t.add(ack(1, msg_type::ready, encoded(wire::ready_msg{1, ag::device::sim(0), 4242})));
  t.add(ack(1, msg_type::received, encoded(wire::received_msg{1, 1})));
  t.add(ack(1, msg_type::done, encoded(wire::done_msg{1, 2, 128})));
  t.add(ack(1, msg_type::failed,
            encoded(wire::failed_msg{1, 1, "sim:0: relu of a released operand"})));
  t.add(trace::read_rec{3, 128, bytes(64, '\x40')});
  t.add(trace::live_rec{{{1, 0, 0, 64}, {3, 0, 128, 64}, {5, 1, operand_ref::no_offset, 64}}});
  t.add(trace::frame_rec{3, msg_type::destroy, {}});
  return t;
}

void trace_corpus(corpus& c) {
  using wire::msg_type;
  c.write("seed-thread", thread_trace().end().get());

  trace_bytes minimal;
  minimal.add(two_lanes(false));
  c.write("seed-minimal", minimal.end().get());

  // Process mode: the child's start-up arguments, then the publisher's frames.
  trace_bytes process;
  process.add(two_lanes(true));
  auto args = typical_args();
  args.where = ag::device::sim(0);
  args.lane = 1;
  args.store_bytes = 4096;
  process.add(trace::startup_rec{1, args});
  process.add(trace::frame_rec{1, msg_type::hello, {}});
  process.add(ack(1, msg_type::ready, encoded(wire::ready_msg{1, ag::device::sim(0), 4243})));
  const wire::execute_msg every{{ag::batch{1, 0, every_kind(), {10, 11}}}};
  process.add(trace::frame_rec{2, msg_type::execute, encoded(every)});
  process.add(ack(1, msg_type::received, encoded(wire::received_msg{1, 1})));
  process.add(ack(1, msg_type::done, encoded(wire::done_msg{1, 10, 4096})));
  process.add(trace::live_rec{{}});
  process.add(trace::frame_rec{3, msg_type::destroy, {}});
  c.write("seed-process", process.end().get());

  // The begin record's lane count as a two-byte varbyte (0x82 0x00): longer than CAF writes it,
  // but valid; its re-encoding is shorter than the input. Payload: wire_version u32, process u8,
  // then the count.
  {
    auto rec = trace::encode_record(two_lanes(false), 1'000'000'000);
    const std::size_t count_at = trace::record_header_size + 5;
    if (rec[count_at] != 2)
      throw ag::error("trace seeds: the begin record's layout changed");
    rec[count_at] = static_cast<char>(0x82);
    rec.insert(rec.begin() + static_cast<long>(count_at) + 1, 0);
    const uint32_t length = static_cast<uint32_t>(rec.size() - trace::record_header_size
                                                  - trace::record_trailer_size);
    std::memcpy(rec.data() + 4, &length, sizeof length);
    trace_bytes t;
    t.add_raw(reseal(rec));
    c.write("seed-noncanonical-lane-count", t.end().get());
  }

  const auto whole = thread_trace().end().get();
  c.write("broken-empty", {});
  c.write("broken-header-only", trace::file_header());
  auto bad_magic = whole;
  bad_magic[0] = 'X';
  c.write("broken-bad-magic", bad_magic);
  auto format2 = whole;
  format2[8] = static_cast<char>(trace::format_version + 1);
  c.write("broken-format-version-next", format2);

  c.write("broken-missing-end", thread_trace().get());
  // The store write (the second record) is cut in its payload, or flipped in its operand id so
  // that the stored CRC no longer matches.
  const std::size_t store_write_payload =
    trace::file_header_size + trace::encode_record(two_lanes(false), 0).size()
    + trace::record_header_size;
  c.write("broken-truncated-mid-record",
          bytes(whole.begin(), whole.begin() + static_cast<long>(store_write_payload + 20)));
  c.write("broken-truncated-in-trailer", without_last(whole));
  auto bad_crc = whole;
  bad_crc[store_write_payload + 2] ^= 0x01;
  c.write("broken-bad-crc", bad_crc);

  auto after_end = thread_trace().end();
  after_end.add(trace::read_rec{3, 128, bytes(8, 'r')});
  c.write("broken-record-after-end", after_end.get());

  auto miscount = thread_trace();
  miscount.add(trace::end_rec{miscount.records() + 1});
  c.write("broken-end-miscounts", miscount.get());

  trace_bytes no_begin;
  no_begin.add(trace::read_rec{3, 0, bytes(8, 'r')});
  c.write("broken-first-not-begin", no_begin.end().get());

  auto unknown = trace::encode_record(trace::end_rec{1}, 0);
  unknown[0] = 10;
  trace_bytes unknown_type;
  unknown_type.add(two_lanes(false)).add_raw(reseal(unknown));
  c.write("broken-unknown-type", unknown_type.end().get());

  auto reserved = trace::encode_record(trace::frame_rec{1, msg_type::hello, {}}, 0);
  reserved[2] = 1;
  trace_bytes reserved_set;
  reserved_set.add(two_lanes(false)).add_raw(reseal(reserved));
  c.write("broken-reserved-nonzero", reserved_set.end().get());

  trace_bytes outside;
  outside.add(two_lanes(false)).add(trace::store_write_rec{1, 4090, bytes(16, 'w')});
  c.write("broken-store-write-outside", outside.end().get());

  trace_bytes huge_offset;
  huge_offset.add(two_lanes(false)).add(trace::read_rec{1, ~uint64_t{0} - 4, bytes(16, 'r')});
  c.write("broken-read-offset-wraps", huge_offset.end().get());

  trace_bytes lane_out;
  lane_out.add(two_lanes(false))
    .add(ack(2, msg_type::done, encoded(wire::done_msg{2, 1, 0})));
  c.write("broken-ack-lane-2", lane_out.end().get());

  const wire::execute_msg lane_7{{ag::batch{7, 0, {op(op_kind::fill, dev(1))}, {}}}};
  trace_bytes frame_lane_out;
  frame_lane_out.add(two_lanes(false)).add(trace::frame_rec{1, msg_type::execute, encoded(lane_7)});
  c.write("broken-execute-lane-7", frame_lane_out.end().get());

  trace_bytes child_frame;
  child_frame.add(two_lanes(false))
    .add(trace::frame_rec{1, msg_type::ready, encoded(wire::ready_msg{1, ag::device::sim(0), 1})});
  c.write("broken-frame-ready", child_frame.end().get());

  auto v_next = two_lanes(false);
  v_next.wire_version = wire::version + 1;
  trace_bytes other_wire;
  other_wire.add(v_next);
  c.write("broken-wire-version-next", other_wire.end().get());

  auto two_cpus = two_lanes(false);
  two_cpus.lanes.push_back(ag::device::cpu());
  trace_bytes second_cpu;
  second_cpu.add(two_cpus);
  c.write("broken-second-cpu-lane", second_cpu.end().get());
}
} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " OUTDIR\n";
    return 2;
  }
  try {
    const fs::path out{argv[1]};
    corpus p{out / "pubsub"};
    pubsub(p);
    corpus q{out / "pushpull"};
    pushpull(q);
    corpus s{out / "startup"};
    startup(s);
    corpus t{out / "trace"};
    trace_corpus(t);
    p.report();
    q.report();
    s.report();
    t.report();
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
