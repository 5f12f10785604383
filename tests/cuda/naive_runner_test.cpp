// Tests of cuda/naive_runner over the CPU stream of sim:0 and a heap buffer as the tensor store:
// operators run in order, and a bad operator is an ag::error naming it that leaves nothing behind.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "actorgraph/error.hpp"
#include "cuda/kernel_stream.hpp"
#include "cuda/naive_runner.hpp"
#include "graph/op.hpp"

using ag::op_desc;
using ag::op_kind;
using ag::operand_ref;

namespace {

constexpr std::size_t store_size = 64 * 1024;

// The tensor store stand-in: 64 KiB, aligned as the real store's offsets are.
struct store {
  alignas(256) std::byte bytes[store_size] = {};

  float at(uint64_t offset) const {
    float x;
    std::memcpy(&x, bytes + offset, sizeof x);
    return x;
  }
  void put(uint64_t offset, const std::vector<float>& values) {
    std::memcpy(bytes + offset, values.data(), values.size() * sizeof(float));
  }
};

operand_ref dev(ag::operand_id id) { return operand_ref{id, operand_ref::no_offset}; }
operand_ref host(uint64_t offset, ag::operand_id id = 0) { return operand_ref{id, offset}; }

op_desc fill(ag::operand_id out, uint64_t count, float value) {
  op_desc op;
  op.kind = op_kind::fill;
  op.out = dev(out);
  op.count = count;
  op.scalar = value;
  return op;
}

op_desc binary(op_kind kind, operand_ref out, operand_ref a, operand_ref b, uint64_t count) {
  op_desc op;
  op.kind = kind;
  op.out = out;
  op.a = a;
  op.b = b;
  op.count = count;
  return op;
}

op_desc unary(op_kind kind, operand_ref out, operand_ref a, uint64_t count) {
  op_desc op;
  op.kind = kind;
  op.out = out;
  op.a = a;
  op.count = count;
  return op;
}

op_desc matmul(operand_ref out, operand_ref a, operand_ref b, uint64_t m, uint64_t k, uint64_t n) {
  op_desc op;
  op.kind = op_kind::matmul;
  op.out = out;
  op.a = a;
  op.b = b;
  op.m = m;
  op.k = k;
  op.n = n;
  op.count = m * n;
  return op;
}

// The real sim stream, counting what it hands out, so a test can see that every byte comes back.
class counting_stream final : public ag::kernel_stream {
public:
  explicit counting_stream(std::unique_ptr<ag::kernel_stream> inner) : inner_(std::move(inner)) {}

  ag::device device() const noexcept override { return inner_->device(); }
  void* allocate(std::size_t bytes) override {
    void* p = inner_->allocate(bytes);
    ++allocations;
    outstanding += bytes;
    return p;
  }
  void deallocate(void* ptr, std::size_t bytes) noexcept override {
    ++deallocations;
    outstanding -= bytes;
    inner_->deallocate(ptr, bytes);
  }
  void fill(ag::dtype t, void* out, std::size_t count, double value) override {
    inner_->fill(t, out, count, value);
  }
  void elementwise(const ag::elementwise_call& call) override { inner_->elementwise(call); }
  void rows(const ag::row_call& call) override { inner_->rows(call); }
  void sum(const float* a, float* out, std::size_t count) override { inner_->sum(a, out, count); }
  void matmul(const ag::matmul_call& call) override { inner_->matmul(call); }
  void random(ag::random_kind kind, float* out, std::size_t count, uint64_t seed, uint64_t first,
              float a, float b) override {
    inner_->random(kind, out, count, seed, first, a, b);
  }
  void copy(void* dst, bool dst_on_host, const void* src, bool src_on_host,
            std::size_t bytes) override {
    inner_->copy(dst, dst_on_host, src, src_on_host, bytes);
  }
  void copy_peer(void* dst, const void* src, const ag::device& from, std::size_t bytes) override {
    inner_->copy_peer(dst, src, from, bytes);
  }
  void sum_peers(float* out, const float* const* parts, const ag::device* from,
                 std::size_t n_parts, std::size_t count) override {
    inner_->sum_peers(out, parts, from, n_parts, count);
  }
  void synchronize() override { inner_->synchronize(); }

  std::size_t allocations = 0;
  std::size_t deallocations = 0;
  std::size_t outstanding = 0;

private:
  std::unique_ptr<ag::kernel_stream> inner_;
};

struct fixture {
  std::unique_ptr<ag::kernel_stream> stream = ag::make_cpu_stream(ag::device::sim(0));
  std::unique_ptr<store> mem = std::make_unique<store>();
  ag::naive_runner runner{*stream, mem->bytes, store_size};
};

} // namespace

TEST_CASE("a cpu stream reports the device it was made for", "[cuda-ref]") {
  CHECK(ag::make_cpu_stream(ag::device::sim(3))->device() == ag::device::sim(3));
  CHECK(ag::make_stream(ag::device::sim(1))->device() == ag::device::sim(1));
  CHECK(ag::make_stream(ag::device::cpu())->device() == ag::device::cpu());
}

TEST_CASE("fill, add and a copy to the store at an offset leave the sum in the store",
          "[cuda-ref]") {
  fixture f;
  f.runner.run(fill(1, 4, 1.5f));
  f.runner.run(fill(2, 4, 2.25f));
  f.runner.run(binary(op_kind::add, dev(3), dev(1), dev(2), 4));
  CHECK(f.runner.live_operands() == 3);
  CHECK(f.runner.live_bytes() == 3 * 4 * sizeof(float));

  f.runner.run(unary(op_kind::copy, host(512, 3), dev(3), 4));
  f.stream->synchronize();
  for (uint64_t i = 0; i < 4; ++i)
    CHECK(f.mem->at(512 + 4 * i) == 3.75f);
  // Only those 16 bytes were written.
  CHECK(f.mem->at(508) == 0.0f);
  CHECK(f.mem->at(528) == 0.0f);
  // A copy to the store creates no device operand.
  CHECK(f.runner.live_operands() == 3);

  f.runner.release(1);
  f.runner.release(2);
  f.runner.release(3);
  CHECK(f.runner.live_bytes() == 0);
  CHECK(f.runner.live_operands() == 0);
}

TEST_CASE("every kernel reads store operands and writes back through the runner", "[cuda-ref]") {
  fixture f;
  f.mem->put(0, {1, 2, 3, 4});      // a: [2,2]
  f.mem->put(256, {5, -6, 7, -8});  // b: [2,2]
  f.runner.run(unary(op_kind::copy, dev(1), host(0), 4));
  f.runner.run(unary(op_kind::copy, dev(2), host(256), 4));
  f.runner.run(binary(op_kind::sub, dev(3), dev(1), dev(2), 4));     // -4, 8, -4, 12
  f.runner.run(binary(op_kind::mul, dev(4), dev(1), dev(2), 4));     // 5, -12, 21, -32
  f.runner.run(binary(op_kind::div, dev(5), dev(4), dev(1), 4));     // 5, -6, 7, -8
  f.runner.run(unary(op_kind::relu, dev(6), dev(5), 4));             // 5, 0, 7, 0
  f.runner.run(unary(op_kind::sum, dev(7), dev(6), 4));              // 12
  f.runner.run(matmul(dev(8), dev(1), dev(2), 2, 2, 2));             // [[19,-22],[43,-50]]
  f.runner.run(unary(op_kind::copy, host(1024), dev(3), 4));
  f.runner.run(unary(op_kind::copy, host(2048), dev(6), 4));
  f.runner.run(unary(op_kind::copy, host(3072), dev(7), 1));
  f.runner.run(unary(op_kind::copy, host(4096), dev(8), 4));
  // A kernel on a sim stream may also write the store directly.
  f.runner.run(binary(op_kind::add, host(5120), host(0), dev(1), 4)); // 2, 4, 6, 8
  f.stream->synchronize();

  auto read = [&](uint64_t offset, std::size_t n) {
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i)
      out[i] = f.mem->at(offset + 4 * i);
    return out;
  };
  CHECK(read(1024, 4) == std::vector<float>{-4, 8, -4, 12});
  CHECK(read(2048, 4) == std::vector<float>{5, 0, 7, 0});
  CHECK(read(3072, 1) == std::vector<float>{12});
  CHECK(read(4096, 4) == std::vector<float>{19, -22, 43, -50});
  CHECK(read(5120, 4) == std::vector<float>{2, 4, 6, 8});
  CHECK(f.runner.live_operands() == 8);
  CHECK(f.runner.live_bytes() == 7 * 16 + 4);
}

TEST_CASE("release frees a device operand and ignores ids it does not hold", "[cuda-ref]") {
  fixture f;
  f.runner.run(fill(1, 100, 1.0f));
  f.runner.run(fill(2, 0, 1.0f)); // empty operands are operands too
  CHECK(f.runner.live_operands() == 2);
  CHECK(f.runner.live_bytes() == 400);

  f.runner.release(42);
  CHECK(f.runner.live_operands() == 2);
  f.runner.release(1);
  CHECK(f.runner.live_bytes() == 0);
  CHECK(f.runner.live_operands() == 1);
  f.runner.release(1); // twice: ignored
  f.runner.release(2);
  CHECK(f.runner.live_operands() == 0);
  CHECK(f.runner.live_bytes() == 0);

  // A released id can be produced again.
  f.runner.run(fill(1, 3, 2.0f));
  CHECK(f.runner.live_bytes() == 12);
}

TEST_CASE("a runner destroyed with live operands gives their memory back to the stream",
          "[cuda-ref]") {
  counting_stream stream{ag::make_cpu_stream(ag::device::sim(0))};
  auto mem = std::make_unique<store>();
  {
    ag::naive_runner runner{stream, mem->bytes, store_size};
    runner.run(fill(1, 10, 1.0f));
    runner.run(fill(2, 10, 2.0f));
    runner.run(binary(op_kind::add, dev(3), dev(1), dev(2), 10));
    runner.release(2);
    CHECK(stream.allocations == 3);
    CHECK(stream.deallocations == 1);
  }
  CHECK(stream.deallocations == 3);
  CHECK(stream.outstanding == 0);
}

TEST_CASE("an operator naming an unknown operand throws ag::error naming the op and the id",
          "[cuda-ref]") {
  fixture f;
  f.runner.run(fill(1, 4, 1.0f));
  const auto bytes = f.runner.live_bytes();

  CHECK_THROWS_AS(f.runner.run(binary(op_kind::add, dev(3), dev(1), dev(99), 4)), ag::error);
  CHECK_THROWS_WITH(f.runner.run(binary(op_kind::add, dev(3), dev(1), dev(99), 4)),
                    Catch::StartsWith("add -> #3 (a=#1, b=#99)")
                      && Catch::Contains("operand #99 is not on sim:0"));
  CHECK_THROWS_WITH(f.runner.run(unary(op_kind::relu, dev(3), dev(7), 4)),
                    Catch::StartsWith("relu") && Catch::Contains("operand #7"));
  CHECK_THROWS_WITH(f.runner.run(matmul(dev(3), dev(1), dev(8), 2, 2, 2)),
                    Catch::StartsWith("matmul") && Catch::Contains("operand #8"));
  CHECK_THROWS_WITH(f.runner.run(unary(op_kind::copy, host(0), dev(5), 4)),
                    Catch::StartsWith("copy") && Catch::Contains("operand #5"));
  // Nothing was created for the failed outputs.
  CHECK(f.runner.live_bytes() == bytes);
  CHECK(f.runner.live_operands() == 1);
  f.runner.run(binary(op_kind::add, dev(3), dev(1), dev(1), 4)); // #3 is still free
}

TEST_CASE("an input whose size differs from the op's count throws ag::error naming both sizes",
          "[cuda-ref]") {
  fixture f;
  f.runner.run(fill(1, 4, 1.0f));
  f.runner.run(fill(2, 5, 1.0f));
  const auto bytes = f.runner.live_bytes();

  CHECK_THROWS_AS(f.runner.run(binary(op_kind::mul, dev(3), dev(1), dev(2), 4)), ag::error);
  CHECK_THROWS_WITH(f.runner.run(binary(op_kind::mul, dev(3), dev(1), dev(2), 4)),
                    Catch::StartsWith("mul -> #3")
                      && Catch::Contains("operand #2 holds 20 bytes, the op reads 16"));
  CHECK_THROWS_WITH(f.runner.run(unary(op_kind::relu, dev(3), dev(1), 5)),
                    Catch::StartsWith("relu")
                      && Catch::Contains("holds 16 bytes, the op reads 20"));
  CHECK_THROWS_WITH(f.runner.run(unary(op_kind::sum, dev(3), dev(1), 3)),
                    Catch::StartsWith("sum") && Catch::Contains("the op needs 12"));
  // [2,2] x [2,2] needs 16 bytes of b, #2 holds 20.
  CHECK_THROWS_WITH(f.runner.run(matmul(dev(3), dev(1), dev(2), 2, 2, 2)),
                    Catch::StartsWith("matmul") && Catch::Contains("operand #2 holds 20 bytes"));
  CHECK(f.runner.live_bytes() == bytes);
  CHECK(f.runner.live_operands() == 2);
}

TEST_CASE("a store range past the end of the store throws ag::error naming the range",
          "[cuda-ref]") {
  fixture f;
  f.runner.run(fill(1, 4, 1.0f));
  const auto bytes = f.runner.live_bytes();
  const uint64_t last = store_size - 4;

  // Writing 16 bytes where 4 are left.
  CHECK_THROWS_AS(f.runner.run(unary(op_kind::copy, host(last), dev(1), 4)), ag::error);
  CHECK_THROWS_WITH(f.runner.run(unary(op_kind::copy, host(last), dev(1), 4)),
                    Catch::StartsWith("copy -> store@" + std::to_string(last))
                      && Catch::Contains("lies outside the store of 65536 bytes"));
  // Reading 16 bytes where 4 are left, into a new device operand.
  CHECK_THROWS_WITH(f.runner.run(unary(op_kind::copy, dev(2), host(last), 4)),
                    Catch::StartsWith("copy -> #2") && Catch::Contains("outside the store"));
  // Starting past the end.
  CHECK_THROWS_WITH(f.runner.run(unary(op_kind::copy, host(store_size + 256), dev(1), 4)),
                    Catch::Contains("outside the store"));
  // Ending exactly at the end is fine.
  f.runner.run(unary(op_kind::copy, host(store_size - 16), dev(1), 4));
  f.stream->synchronize();
  CHECK(f.mem->at(store_size - 4) == 1.0f);

  CHECK(f.runner.live_bytes() == bytes);
  CHECK(f.runner.live_operands() == 1);
}

TEST_CASE("a store offset near UINT64_MAX throws ag::error instead of wrapping around",
          "[cuda-ref]") {
  fixture f;
  f.runner.run(fill(1, 4, 1.0f));
  const auto bytes = f.runner.live_bytes();
  // operand_ref::no_offset (UINT64_MAX) means "on the device", so stop just short of it: offset +
  // 16 bytes wraps to a small number that a careless bounds check would accept.
  for (const uint64_t offset : {std::numeric_limits<uint64_t>::max() - 3,
                                std::numeric_limits<uint64_t>::max() - 15,
                                std::numeric_limits<uint64_t>::max() / 2}) {
    INFO("offset " << offset);
    CHECK_THROWS_WITH(f.runner.run(unary(op_kind::copy, host(offset), dev(1), 4)),
                      Catch::StartsWith("copy") && Catch::Contains("outside the store"));
    CHECK_THROWS_WITH(f.runner.run(unary(op_kind::copy, dev(2), host(offset), 4)),
                      Catch::StartsWith("copy") && Catch::Contains("outside the store"));
    CHECK_THROWS_WITH(f.runner.run(binary(op_kind::add, dev(2), dev(1), host(offset), 4)),
                      Catch::StartsWith("add") && Catch::Contains("outside the store"));
  }
  CHECK(f.runner.live_bytes() == bytes);
  CHECK(f.runner.live_operands() == 1);
}

TEST_CASE("an element count no memory could hold throws ag::error instead of overflowing",
          "[cuda-ref]") {
  fixture f;
  CHECK_THROWS_WITH(f.runner.run(fill(1, std::numeric_limits<uint64_t>::max() / 4 + 1, 1.0f)),
                    Catch::StartsWith("fill -> #1") && Catch::Contains("too large"));
  CHECK_THROWS_WITH(f.runner.run(fill(1, std::numeric_limits<uint64_t>::max(), 1.0f)),
                    Catch::Contains("too large"));
  // m * k overflows 64 bits (checked before the operands are looked up).
  CHECK_THROWS_WITH(f.runner.run(matmul(dev(3), dev(1), dev(2), uint64_t{1} << 33,
                                        uint64_t{1} << 33, 1)),
                    Catch::StartsWith("matmul") && Catch::Contains("overflow"));
  CHECK(f.runner.live_bytes() == 0);
  CHECK(f.runner.live_operands() == 0);
}

TEST_CASE("an output id that already exists throws ag::error and keeps the old operand",
          "[cuda-ref]") {
  fixture f;
  f.runner.run(fill(1, 4, 7.0f));
  f.runner.run(fill(2, 4, 1.0f));
  const auto bytes = f.runner.live_bytes();

  CHECK_THROWS_AS(f.runner.run(fill(1, 4, 9.0f)), ag::error);
  CHECK_THROWS_WITH(f.runner.run(fill(1, 8, 9.0f)),
                    Catch::StartsWith("fill -> #1")
                      && Catch::Contains("operand #1 already exists on sim:0"));
  CHECK_THROWS_WITH(f.runner.run(binary(op_kind::add, dev(2), dev(1), dev(1), 4)),
                    Catch::StartsWith("add -> #2") && Catch::Contains("already exists"));
  CHECK(f.runner.live_bytes() == bytes);
  CHECK(f.runner.live_operands() == 2);

  // #1 still holds its first value.
  f.runner.run(unary(op_kind::copy, host(0), dev(1), 4));
  f.stream->synchronize();
  CHECK(f.mem->at(0) == 7.0f);
  CHECK(f.mem->at(12) == 7.0f);
}

TEST_CASE("an upload op is not executed by a runner and throws ag::error naming it",
          "[cuda-ref]") {
  fixture f;
  op_desc op;
  op.kind = op_kind::upload;
  op.out = dev(1);
  op.count = 4;
  CHECK_THROWS_AS(f.runner.run(op), ag::error);
  CHECK_THROWS_WITH(f.runner.run(op),
                    Catch::StartsWith("upload -> #1")
                      && Catch::Contains("not an operator a runner executes"));
  op.kind = static_cast<op_kind>(200);
  CHECK_THROWS_WITH(f.runner.run(op), Catch::StartsWith("op#200"));
  CHECK(f.runner.live_bytes() == 0);
  CHECK(f.runner.live_operands() == 0);
}

TEST_CASE("pieces fill a device operand from the store and copy it back a slice at a time",
          "[cuda-ref]") {
  fixture f;
  auto piece = [](op_kind kind, operand_ref out, operand_ref a, uint64_t first, uint64_t count,
                  uint64_t total) {
    auto op = unary(kind, out, a, count);
    op.m = first;
    op.n = total;
    return op;
  };
  f.mem->put(0, {1, 2, 3, 4, 5, 6});
  // Elements [0, 4) then [4, 6) of #1 (6 elements), created by the first piece.
  f.runner.run(piece(op_kind::copy, dev(1), host(0, 0), 0, 4, 6));
  f.runner.run(piece(op_kind::copy, dev(1), host(16, 0), 4, 2, 6));
  CHECK(f.runner.live_bytes() == 6 * sizeof(float));
  // Elements [2, 5) back to the store at 256.
  f.runner.run(piece(op_kind::copy, host(256, 0), dev(1), 2, 3, 6));
  f.stream->synchronize();
  CHECK(f.mem->at(256) == 3.0f);
  CHECK(f.mem->at(260) == 4.0f);
  CHECK(f.mem->at(264) == 5.0f);
  // A fill piece continues an operand too; a piece outside its operand names the range.
  f.runner.run(piece(op_kind::fill, dev(2), {}, 0, 3, 5));
  CHECK_THROWS_WITH(f.runner.run(piece(op_kind::fill, dev(2), {}, 3, 3, 5)),
                    Catch::Contains("piece [3, +3)") && Catch::Contains("5 elements"));
  // A later piece of an operand that does not exist names it.
  CHECK_THROWS_WITH(f.runner.run(piece(op_kind::copy, dev(9), host(0, 0), 2, 1, 4)),
                    Catch::Contains("#9"));
  CHECK_THROWS_WITH(f.runner.run(piece(op_kind::copy, dev(1), dev(2), 0, 1, 6)),
                    Catch::Contains("between the store and a device operand"));
}

TEST_CASE("an operator whose layout reaches past its operand is refused before anything is read",
          "[cuda-ref]") {
  fixture f;
  f.runner.run(fill(1, 4, 1.0f));
  // A stride that makes 4-byte elements wrap past 2^64 bytes, and an int64 one past 2^62.
  op_desc neg = unary(op_kind::neg, dev(2), dev(1), 2);
  neg.layout = {{2}, {(int64_t{1} << 62) - 1, 0, 0}, 0, 0, 0};
  CHECK_THROWS_WITH(f.runner.run(neg), Catch::Contains("neg -> #2"));
  op_desc wide = unary(op_kind::neg, dev(3), dev(1), 3);
  wide.type = wide.in_type = ag::dtype::int64;
  wide.layout = {{3}, {int64_t{1} << 60, 0, 0}, 0, 0, 0};
  CHECK_THROWS_WITH(f.runner.run(wide), Catch::Contains("is too large") || Catch::Contains("past"));
  // One element too far: the operand holds 4 floats, the layout reads element 4.
  op_desc far = binary(op_kind::add, dev(4), dev(1), dev(1), 2);
  far.layout = {{2}, {1, 1, 0}, 3, 0, 0};
  CHECK_THROWS_WITH(f.runner.run(far), Catch::Contains("holds 16 bytes, the op reads 20"));
  // Strides of an operand the operator does not read are not looked at, and do no harm.
  op_desc scalar = binary(op_kind::mul, dev(5), dev(1), operand_ref{}, 4);
  scalar.scalar = 2.0;
  scalar.layout = {{4}, {1, INT64_MAX, INT64_MIN}, 0, INT64_MAX, 0};
  f.runner.run(scalar);
  CHECK(f.runner.live_operands() == 2);
  // A rank beyond 8 is refused even from a batch that never went through a decoder.
  op_desc deep = unary(op_kind::neg, dev(6), dev(1), 1);
  deep.layout.shape.assign(9, 1);
  deep.layout.strides.assign(27, 0);
  CHECK_THROWS_WITH(f.runner.run(deep), Catch::Contains("a layout of 9 dimensions"));
}

TEST_CASE("empty matmuls, reductions and concats read nothing, whatever their other fields say",
          "[cuda-ref]") {
  fixture f;
  f.runner.run(fill(1, 4, 1.0f));
  // A batched matmul with n = 0 and an offset far outside a: nothing is read.
  op_desc mm = matmul(dev(2), dev(1), dev(1), 1, 1000, 0);
  mm.layout = {{1, 0, 1000}, {0, 0, 1, 0, 0, 1, 0, 0, 0}, int64_t{1} << 40, 0, 0};
  mm.count = 0;
  f.runner.run(mm);
  // A plain one with m = 0 and a huge n.
  f.runner.run(matmul(dev(3), dev(1), dev(1), 0, 0, uint64_t{1} << 40));
  CHECK_THROWS_WITH(f.runner.run(matmul(dev(4), dev(1), dev(1), 1, 1, uint64_t{1} << 63)),
                    Catch::Contains("past 2^62"));
  // A concat of no rows must have no elements.
  op_desc cat;
  cat.kind = op_kind::concat;
  cat.out = dev(5);
  cat.a = dev(1);
  cat.b = dev(1);
  cat.count = 4;
  CHECK_THROWS_WITH(f.runner.run(cat), Catch::Contains("do not fit 4 elements in 0 rows"));
  // A softmax over rows of 0 elements writes nothing, for any number of rows.
  op_desc soft;
  soft.kind = op_kind::softmax;
  soft.out = dev(6);
  soft.a = dev(1);
  soft.m = uint64_t{1} << 40;
  soft.n = 1;
  f.runner.run(soft);
  f.stream->synchronize();
}
