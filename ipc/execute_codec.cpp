// The Execute body (wire::execute_msg) written and read directly: the same bytes CAF's binary
// serializer writes from the schemas' inspect overloads (docs/PROTOCOL.md, section 2: each integer
// big-endian at its own width, a sequence as its varbyte length then its elements), with the same
// bounds checks as serial::bounded_deserializer, without a virtual call per field. It is on the
// path of every batch a child receives: CAF's reader took about two microseconds per operator.
#include <algorithm>
#include <cstring>
#include <string>

#include "actorgraph/error.hpp"
#include "ipc/wire.hpp"

namespace ag::wire {

namespace {

class writer {
public:
  explicit writer(char* p) noexcept : p_(p) {}
  char* at() const noexcept { return p_; }
  void u8(uint8_t x) noexcept { *p_++ = static_cast<char>(x); }
  void be(uint64_t x, int n) noexcept {
    for (int i = n - 1; i >= 0; --i, x >>= 8)
      p_[i] = static_cast<char>(x & 0xff);
    p_ += n;
  }
  void u32(uint32_t x) noexcept { be(x, 4); }
  void u64(uint64_t x) noexcept { be(x, 8); }
  void i64(int64_t x) noexcept { be(static_cast<uint64_t>(x), 8); }
  void f64(double x) noexcept {
    uint64_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    u64(bits);
  }
  void length(std::size_t n) noexcept { // as CAF's serializer: 32 bits, base 128, low group first
    auto x = static_cast<uint32_t>(n);
    for (; x > 0x7f; x >>= 7)
      u8(static_cast<uint8_t>((x & 0x7f) | 0x80));
    u8(static_cast<uint8_t>(x));
  }
  void ref(const operand_ref& r) noexcept {
    u64(r.id);
    u64(r.offset);
  }

private:
  char* p_;
};

// Every read past the end, and every length beyond what remains, sets failed(); what it returns
// then is 0.
class reader {
public:
  reader(const void* data, std::size_t size) noexcept
    : p_(static_cast<const unsigned char*>(data)), end_(p_ + size) {}
  bool failed() const noexcept { return failed_; }
  void fail() noexcept { failed_ = true; }
  std::size_t remaining() const noexcept { return static_cast<std::size_t>(end_ - p_); }

  uint64_t be(int n) noexcept {
    if (remaining() < static_cast<std::size_t>(n)) {
      failed_ = true;
      return 0;
    }
    uint64_t x = 0;
    for (int i = 0; i < n; ++i)
      x = (x << 8) | p_[i];
    p_ += n;
    return x;
  }
  uint8_t u8() noexcept { return static_cast<uint8_t>(be(1)); }
  uint32_t u32() noexcept { return static_cast<uint32_t>(be(4)); }
  uint64_t u64() noexcept { return be(8); }
  int64_t i64() noexcept { return static_cast<int64_t>(be(8)); }
  double f64() noexcept {
    const uint64_t bits = u64();
    double x = 0;
    std::memcpy(&x, &bits, sizeof x);
    return x;
  }
  // A sequence's length: at most 32 bits, and no more elements than bytes remain (each takes one
  // at least), as serial::bounded_deserializer checks.
  std::size_t length() noexcept {
    uint64_t x = 0;
    uint8_t byte = 0;
    int shift = 0;
    do {
      if (shift > 28 || remaining() == 0) {
        failed_ = true;
        return 0;
      }
      byte = *p_++;
      x |= uint64_t{byte & 0x7fu} << shift;
      shift += 7;
    } while (byte & 0x80);
    if (x > UINT32_MAX || x > remaining()) {
      failed_ = true;
      return 0;
    }
    return static_cast<std::size_t>(x);
  }
  operand_ref ref() noexcept {
    operand_ref r;
    r.id = u64();
    r.offset = u64();
    return r;
  }

private:
  const unsigned char* p_;
  const unsigned char* end_;
  bool failed_ = false;
};

void put(writer& w, const op_desc& op) noexcept {
  w.u8(static_cast<uint8_t>(op.kind));
  w.ref(op.out);
  w.ref(op.a);
  w.ref(op.b);
  w.u64(op.count);
  w.u64(op.m);
  w.u64(op.k);
  w.u64(op.n);
  w.f64(op.scalar);
  w.u8(static_cast<uint8_t>(op.type));
  w.u8(static_cast<uint8_t>(op.in_type));
  w.ref(op.c);
  w.length(op.layout.shape.size());
  for (auto v : op.layout.shape)
    w.i64(v);
  w.length(op.layout.strides.size());
  for (auto v : op.layout.strides)
    w.i64(v);
  w.i64(op.layout.a_offset);
  w.i64(op.layout.b_offset);
  w.i64(op.layout.c_offset);
  w.f64(op.scalar2);
}

void get(reader& r, std::vector<int64_t>& v) {
  const std::size_t n = r.length();
  if (n > r.remaining() / sizeof(int64_t)) // truncated: nothing allocated for it
    return r.fail();
  v.resize(n);
  for (auto& x : v)
    x = r.i64();
}

void get(reader& r, op_desc& op) {
  op.kind = static_cast<op_kind>(r.u8());
  op.out = r.ref();
  op.a = r.ref();
  op.b = r.ref();
  op.count = r.u64();
  op.m = r.u64();
  op.k = r.u64();
  op.n = r.u64();
  op.scalar = r.f64();
  op.type = static_cast<dtype>(r.u8());
  op.in_type = static_cast<dtype>(r.u8());
  op.c = r.ref();
  get(r, op.layout.shape);
  get(r, op.layout.strides);
  op.layout.a_offset = r.i64();
  op.layout.b_offset = r.i64();
  op.layout.c_offset = r.i64();
  op.scalar2 = r.f64();
}

[[noreturn]] void refuse(const std::string& why) {
  throw error("wire: malformed execute message: " + why);
}

} // namespace

bytes encode(execute_msg& x) {
  bytes out(encoded_size(x));
  writer w{out.data()};
  w.length(x.batches.size());
  for (const auto& b : x.batches) {
    w.u32(b.lane);
    w.u64(b.ops_before);
    w.length(b.ops.size());
    for (const auto& op : b.ops)
      put(w, op);
    w.length(b.no_hold.size());
    for (auto id : b.no_hold)
      w.u64(id);
    w.u64(b.step);
  }
  if (w.at() != out.data() + out.size())
    throw error("wire: an Execute body took " + std::to_string(w.at() - out.data())
                + " bytes, its size said " + std::to_string(out.size()));
  return out;
}

void decode(const void* data, std::size_t size, execute_msg& x) {
  reader r{data, size};
  const auto truncated = [&] {
    refuse("truncated or a length beyond the " + std::to_string(size) + "-byte buffer");
  };
  x.batches.clear();
  const std::size_t batches = r.length();
  for (std::size_t i = 0; i < batches && !r.failed(); ++i) {
    auto& b = x.batches.emplace_back();
    b.lane = r.u32();
    b.ops_before = r.u64();
    const std::size_t ops = r.length();
    b.ops.reserve(std::min(ops, r.remaining() / op_desc_bytes));
    for (std::size_t k = 0; k < ops && !r.failed(); ++k)
      get(r, b.ops.emplace_back());
    const std::size_t held = r.length();
    b.no_hold.reserve(std::min(held, r.remaining() / no_hold_bytes));
    for (std::size_t k = 0; k < held && !r.failed(); ++k)
      b.no_hold.push_back(r.u64());
    b.step = r.u64();
  }
  if (r.failed())
    truncated();
  if (r.remaining() != 0)
    refuse(std::to_string(r.remaining()) + " trailing bytes");
  for (const auto& b : x.batches)
    for (const auto& op : b.ops)
      if (auto why = malformed(op); !why.empty())
        refuse("lane " + std::to_string(b.lane) + " has " + why);
}

} // namespace ag::wire
