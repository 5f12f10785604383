// The Execute body (wire::execute_msg) written and read directly: the same bytes CAF's binary
// serializer writes from the schemas' inspect overloads (docs/PROTOCOL.md, section 2: each integer
// big-endian at its own width, a sequence as its varbyte length then its elements), with the same
// bounds checks as serial::bounded_deserializer, without a virtual call per field. It is on the
// path of every batch a child receives: CAF's reader took about two microseconds per operator.
#include <algorithm>
#include <cstring>
#include <string>

#include "actorgraph/error.hpp"
#include "graph/step_shape.hpp"
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
  const char* at() const noexcept { return reinterpret_cast<const char*>(p_); }
  void skip(std::size_t n) noexcept {
    if (remaining() < n)
      failed_ = true;
    else
      p_ += n;
  }

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

// op, or with `shape` its shape (graph/step_shape.hpp: shape_of), op not copied.
void put(writer& w, const op_desc& op, bool shape = false) noexcept {
  const auto ref = [&](const operand_ref& r) { w.ref(shape ? shape_of(r) : r); };
  const bool seeded = shape && ag::seeded(op.kind); // m and n are values
  w.u8(static_cast<uint8_t>(op.kind));
  ref(op.out);
  ref(op.a);
  ref(op.b);
  w.u64(op.count);
  w.u64(seeded ? 0 : op.m);
  w.u64(op.k);
  w.u64(seeded ? 0 : op.n);
  w.f64(shape ? 0.0 : op.scalar);
  w.u8(static_cast<uint8_t>(op.type));
  w.u8(static_cast<uint8_t>(op.in_type));
  ref(op.c);
  w.length(op.layout.shape.size());
  for (auto v : op.layout.shape)
    w.i64(v);
  w.length(op.layout.strides.size());
  for (auto v : op.layout.strides)
    w.i64(v);
  w.i64(op.layout.a_offset);
  w.i64(op.layout.b_offset);
  w.i64(op.layout.c_offset);
  w.f64(shape ? 0.0 : op.scalar2);
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

// Past one encoded operator, without decoding it.
void skip_op(reader& r) noexcept {
  constexpr std::size_t head = sizeof(op_kind) + 4 * operand_ref_bytes + 4 * sizeof(uint64_t)
                               + sizeof(double) + 2 * sizeof(dtype);
  r.skip(head - operand_ref_bytes); // to c, which comes after the dtypes
  r.skip(operand_ref_bytes);
  for (int dims = 0; dims < 2 && !r.failed(); ++dims) {
    const std::size_t n = r.length();
    if (n > r.remaining() / sizeof(int64_t))
      return r.fail();
    r.skip(n * sizeof(int64_t));
  }
  r.skip(3 * sizeof(int64_t) + sizeof(double));
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
    const bool split = split_on_wire(b);
    const std::size_t ops = b.op_count();
    w.u32(b.lane);
    w.u64(b.ops_before);
    w.u64(b.step);
    w.length(ops);
    for (std::size_t i = 0; i < ops; ++i)
      put(w, b.shape ? b.shape->ops[i] : b.ops[i], split);
    w.length(b.no_hold.size());
    for (auto id : b.no_hold)
      w.u64(id);
    if (split) {
      w.length(ops * value_words);
      uint64_t words[value_words];
      for (const auto& op : b.ops) {
        put_values(op, words);
        for (auto v : words)
          w.u64(v);
      }
    } else {
      w.length(b.values.size());
      for (auto v : b.values)
        w.u64(v);
    }
  }
  if (w.at() != out.data() + out.size())
    throw error("wire: an Execute body took " + std::to_string(w.at() - out.data())
                + " bytes, its size said " + std::to_string(out.size()));
  return out;
}

namespace {

void get_ops(reader& r, std::size_t ops, std::vector<op_desc>& into) {
  into.reserve(std::min(ops, r.remaining() / op_desc_bytes));
  for (std::size_t k = 0; k < ops && !r.failed(); ++k)
    get(r, into.emplace_back());
}

void check(const batch& b, const std::vector<op_desc>& ops) {
  for (const auto& op : ops)
    if (auto why = malformed(op); !why.empty())
      refuse("lane " + std::to_string(b.lane) + " has " + why);
}

// memo: a child's (above); it runs lane `lane` alone, and the other lanes' batches are passed over.
void decode_into(const void* data, std::size_t size, execute_msg& x, shape_memo* memo,
                 uint32_t lane) {
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
    b.step = r.u64();
    const std::size_t ops = r.length();
    const char* ops_at = r.at();
    for (std::size_t k = 0; k < ops && !r.failed(); ++k)
      skip_op(r);
    const std::size_t ops_bytes = static_cast<std::size_t>(r.at() - ops_at);
    const std::size_t held = r.length();
    b.no_hold.reserve(std::min(held, r.remaining() / no_hold_bytes));
    for (std::size_t k = 0; k < held && !r.failed(); ++k)
      b.no_hold.push_back(r.u64());
    const std::size_t values = r.length();
    if (r.failed())
      truncated();
    if (values != 0 && (b.step == 0 || values != ops * value_words))
      refuse("lane " + std::to_string(b.lane) + " has " + std::to_string(values)
             + " value words for " + std::to_string(ops) + " operators"
             + (b.step == 0 ? " outside a step" : ""));
    if (memo && b.lane != lane) {
      r.skip(values * sizeof(uint64_t));
      x.batches.pop_back();
      continue;
    }
    b.values.resize(values);
    for (auto& v : b.values)
      v = r.u64();
    if (r.failed())
      truncated();
    if (values != 0 && memo) { // a step's shape, decoded once
      if (auto known = memo->find(ops_at, ops_bytes)) {
        b.shape = std::move(known);
        continue;
      }
      reader shape_reader{ops_at, ops_bytes};
      auto shape = std::make_shared<step_shape>();
      get_ops(shape_reader, ops, shape->ops);
      check(b, shape->ops);
      shape->hash = shape_hash(shape->ops.data(), shape->ops.size());
      memo->add(ops_at, ops_bytes, shape);
      b.shape = std::move(shape);
      continue;
    }
    reader ops_reader{ops_at, ops_bytes};
    get_ops(ops_reader, ops, b.ops);
    check(b, b.ops);
    if (values != 0) { // whole again
      for (std::size_t k = 0; k < ops; ++k)
        set_values(b.ops[k], &b.values[k * value_words]);
      b.values.clear();
    }
  }
  if (r.failed())
    truncated();
  if (r.remaining() != 0)
    refuse(std::to_string(r.remaining()) + " trailing bytes");
}

} // namespace

void decode(const void* data, std::size_t size, execute_msg& x) {
  decode_into(data, size, x, nullptr, 0);
}

void decode(const void* data, std::size_t size, execute_msg& x, shape_memo& memo, uint32_t lane) {
  decode_into(data, size, x, &memo, lane);
}

std::shared_ptr<const step_shape> shape_memo::find(const char* p, std::size_t n) noexcept {
  for (auto& e : entries_)
    if (e.bytes.size() == n && std::memcmp(e.bytes.data(), p, n) == 0) {
      e.used = ++clock_;
      return e.shape;
    }
  return nullptr;
}

void shape_memo::add(const char* p, std::size_t n, std::shared_ptr<const step_shape> shape) {
  if (entries_.size() >= capacity) { // the least recently used goes
    auto lru = std::min_element(entries_.begin(), entries_.end(),
                                [](const entry& a, const entry& b) { return a.used < b.used; });
    entries_.erase(lru);
  }
  entries_.push_back({std::string(p, n), std::move(shape), ++clock_});
}

} // namespace ag::wire
