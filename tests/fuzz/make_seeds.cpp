// Writes the seed corpora of the wire fuzz targets (tests/fuzz/corpus/): valid messages made with
// the real encoders, and a few broken ones near the decoders' edges. Run by hand after a change to
// the wire format: make_seeds OUTDIR writes OUTDIR/pubsub, OUTDIR/pushpull and OUTDIR/startup.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "actorgraph/device.hpp"
#include "actorgraph/error.hpp"
#include "graph/op.hpp"
#include "ipc/wire.hpp"

namespace fs = std::filesystem;
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
    p.report();
    q.report();
    s.report();
  } catch (const std::exception& e) {
    std::cerr << argv[0] << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
