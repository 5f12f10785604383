// Tests of the CUDA reductions, softmaxes, norms, index and random kernels (cuda/rows.cu) and of
// cuBLAS products with layouts (cuda/cublas_gemm.cpp) against the cpu kernels, which
// tensor_nn_test.cpp and tensor_matmul_test.cpp hold to plain loops. Sums run in a different order
// on the GPU (float, in a fixed tree), so results agree within a tolerance; random draws and
// picked rows agree bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "cuda/cpu_kernels.hpp"
#include "cuda/kernel_stream.hpp"

namespace {

using ag::dtype;
using ag::op_kind;

std::unique_ptr<ag::kernel_stream> gpu0() {
  REQUIRE(ag::cuda_device_count() > 0);
  return ag::make_cuda_stream(0);
}

std::vector<float> random_floats(std::size_t n, uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(rng);
  return v;
}

// Device memory holding host bytes, freed at scope exit.
struct on_device {
  on_device(ag::kernel_stream& s, const void* data, std::size_t bytes)
    : s(s), bytes(bytes), p(s.allocate(bytes)) {
    if (data)
      s.copy(p, false, data, true, bytes);
  }
  ~on_device() { s.deallocate(p, bytes); }
  std::vector<char> fetch() {
    std::vector<char> out(bytes);
    s.copy(out.data(), true, p, false, bytes);
    s.synchronize();
    return out;
  }
  ag::kernel_stream& s;
  std::size_t bytes;
  void* p;
};

std::vector<float> floats(const std::vector<char>& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

void check_close(const std::vector<float>& got, const std::vector<float>& want, double tol) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool same = (std::isnan(got[i]) && std::isnan(want[i]))
                      || std::fabs(got[i] - want[i]) <= tol * std::max(1.0f, std::fabs(want[i]));
    if (!same && bad++ < 3)
      FAIL_CHECK("element " << i << ": got " << got[i] << ", want " << want[i]);
  }
  CHECK(bad == 0);
}

// values as the bytes of t (rounded to nearest even), and back to float.
std::vector<char> as_bytes(const std::vector<float>& f, dtype t) {
  const std::size_t size = ag::size_of(t);
  std::vector<char> out(f.size() * size);
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (t == dtype::float32)
      std::memcpy(out.data() + i * 4, &f[i], 4);
    else if (t == dtype::float16)
      std::memcpy(out.data() + i * 2, &static_cast<const ag::half&>(ag::half(f[i])), 2);
    else
      std::memcpy(out.data() + i * 2, &static_cast<const ag::bfloat16&>(ag::bfloat16(f[i])), 2);
  }
  return out;
}

std::vector<float> as_floats(const std::vector<char>& x, dtype t) {
  const std::size_t size = ag::size_of(t);
  std::vector<float> v(x.size() / size);
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (t == dtype::float32) {
      std::memcpy(&v[i], x.data() + i * 4, 4);
      continue;
    }
    const auto bits = static_cast<uint16_t>(static_cast<uint8_t>(x[i * 2])
                                            | static_cast<uint8_t>(x[i * 2 + 1]) << 8);
    v[i] = t == dtype::float16 ? float(ag::half::from_bits(bits))
                               : float(ag::bfloat16::from_bits(bits));
  }
  return v;
}

} // namespace

TEST_CASE("cuda reductions, softmaxes and norms agree with the cpu kernels", "[cuda]") {
  auto s = gpu0();
  struct shape {
    uint64_t m, k, n;
  };
  for (const shape sh : {shape{3, 1000, 1}, shape{1, 4096, 1}, shape{5, 7, 9}, shape{2, 1, 3},
                         shape{1000, 33, 1}}) {
    const auto a = random_floats(sh.m * sh.k * sh.n, sh.m + sh.k);
    const auto w = random_floats(sh.k, 5), bias = random_floats(sh.k, 6);
    on_device da(*s, a.data(), a.size() * 4), dw(*s, w.data(), w.size() * 4),
      db(*s, bias.data(), bias.size() * 4);
    for (op_kind k : {op_kind::reduce_sum, op_kind::reduce_mean, op_kind::reduce_max,
                      op_kind::argmax, op_kind::softmax, op_kind::log_softmax,
                      op_kind::layer_norm, op_kind::rms_norm}) {
      const bool norm = k == op_kind::layer_norm || k == op_kind::rms_norm;
      if (norm && sh.n != 1)
        continue;
      const bool whole = k == op_kind::softmax || k == op_kind::log_softmax || norm;
      const uint64_t count = whole ? sh.m * sh.k * sh.n : sh.m * sh.n;
      ag::row_call c;
      c.kind = k;
      c.in_type = dtype::float32;
      c.type = k == op_kind::argmax ? dtype::int64 : dtype::float32;
      c.m = sh.m;
      c.k = sh.k;
      c.n = sh.n;
      c.count = count;
      c.scalar = 1e-5;
      std::vector<char> want(count * 8);
      c.a = a.data();
      c.b = norm ? w.data() : nullptr;
      c.c = k == op_kind::layer_norm ? bias.data() : nullptr;
      c.out = want.data();
      ag::cpu::rows(c);
      on_device out(*s, nullptr, want.size());
      c.a = da.p;
      c.b = norm ? dw.p : nullptr;
      c.c = k == op_kind::layer_norm ? db.p : nullptr;
      c.out = out.p;
      s->rows(c);
      const auto got = out.fetch();
      INFO(ag::to_string(k) << " over [" << sh.m << ", " << sh.k << ", " << sh.n << "]");
      if (k == op_kind::argmax) {
        CHECK(std::memcmp(got.data(), want.data(), count * 8) == 0);
      } else {
        std::vector<char> g(got.begin(), got.begin() + count * 4);
        std::vector<char> wv(want.begin(), want.begin() + count * 4);
        check_close(floats(g), floats(wv), 2e-5);
      }
    }
  }
}

TEST_CASE("cuda softmaxes and norms in every floating dtype, vectorised or not, agree with the cpu",
          "[cuda]") {
  auto s = gpu0();
  // Rows read in 16-byte vectors (k a multiple of 8, aligned), element by element (k = 9, or every
  // pointer one element off 16 bytes), and per pass (k past the 4096 held in registers).
  const uint64_t m = 3;
  for (dtype t : {dtype::float32, dtype::float16, dtype::bfloat16})
    for (uint64_t k : {4096, 1000, 24, 9, 5000})
      for (std::size_t shift : {0, 1}) {
        const std::size_t size = ag::size_of(t);
        auto a = random_floats(m * k, k + shift);
        a[k + 2] = INFINITY; // row 1: an infinity; row 2: a NaN and a -inf
        a[2 * k] = NAN;
        a[2 * k + 1] = -INFINITY;
        const auto a_bytes = as_bytes(a, t), w = as_bytes(random_floats(k, 5), t),
                   bias = as_bytes(random_floats(k, 6), t);
        // Device copies starting `shift` elements into their allocation.
        auto place = [&](const std::vector<char>& bytes) {
          std::vector<char> padded(shift * size);
          padded.insert(padded.end(), bytes.begin(), bytes.end());
          return padded;
        };
        const auto pa = place(a_bytes), pw = place(w), pb = place(bias);
        on_device da(*s, pa.data(), pa.size()), dw(*s, pw.data(), pw.size()),
          db(*s, pb.data(), pb.size());
        on_device out(*s, nullptr, (shift + m * k) * size);
        for (op_kind kind :
             {op_kind::softmax, op_kind::log_softmax, op_kind::layer_norm, op_kind::rms_norm}) {
          const bool norm = kind == op_kind::layer_norm || kind == op_kind::rms_norm;
          ag::row_call c;
          c.kind = kind;
          c.type = c.in_type = t;
          c.m = m;
          c.k = k;
          c.n = norm ? 0 : 1; // as the runtime sends them: a norm has no n
          c.count = m * k;
          c.scalar = 1e-5;
          std::vector<char> want(m * k * size);
          c.a = a_bytes.data();
          c.b = norm ? w.data() : nullptr;
          c.c = kind == op_kind::layer_norm ? bias.data() : nullptr;
          c.out = want.data();
          ag::cpu::rows(c);
          auto at = [&](void* p) { return static_cast<char*>(p) + shift * size; };
          c.a = at(da.p);
          c.b = norm ? at(dw.p) : nullptr;
          c.c = kind == op_kind::layer_norm ? at(db.p) : nullptr;
          c.out = at(out.p);
          s->rows(c);
          const auto fetched = out.fetch();
          const std::vector<char> got(fetched.begin() + static_cast<std::ptrdiff_t>(shift * size),
                                      fetched.end());
          INFO(ag::to_string(kind) << " " << ag::to_string(t) << " over rows of " << k
                                   << (shift ? ", one element off 16 bytes" : ""));
          check_close(as_floats(got, t), as_floats(want, t),
                      t == dtype::float32 ? 2e-5 : t == dtype::float16 ? 2e-3 : 1.6e-2);
        }
      }
}

TEST_CASE("cuda embedding, gather and random give the cpu kernels' bits", "[cuda]") {
  auto s = gpu0();
  const auto table = random_floats(50 * 8, 1);
  const std::vector<int64_t> idx{3, 49, 0, 7, 7, 12};
  on_device dt(*s, table.data(), table.size() * 4), di(*s, idx.data(), idx.size() * 8);
  for (op_kind k : {op_kind::embedding, op_kind::gather, op_kind::random}) {
    ag::row_call c;
    c.kind = k;
    c.type = dtype::float32;
    c.in_type = dtype::int64;
    if (k == op_kind::embedding) {
      c.m = 50;
      c.k = 8;
      c.n = 6;
      c.count = 48;
    } else if (k == op_kind::gather) {
      c.m = 6;
      c.k = 50;
      c.count = 6;
    } else {
      c.m = 1234; // seed
      c.k = 1;    // normal
      c.n = 17;   // from element 17
      c.count = 100003;
      c.scalar = 0.5;
      c.scalar2 = 2.0;
    }
    std::vector<char> want(c.count * 4);
    c.a = table.data();
    c.b = idx.data();
    c.out = want.data();
    ag::cpu::rows(c);
    on_device out(*s, nullptr, want.size());
    c.a = dt.p;
    c.b = di.p;
    c.out = out.p;
    s->rows(c);
    INFO(ag::to_string(k));
    CHECK(out.fetch() == want);
  }
}

TEST_CASE("cuBLAS products with transposed, batched and half operands agree with the cpu kernel",
          "[cuda]") {
  auto s = gpu0();
  const int64_t M = 33, K = 70, N = 17;
  for (dtype t : {dtype::float32, dtype::float16, dtype::bfloat16}) {
    for (bool a_t : {false, true})
      for (bool b_t : {false, true}) {
        const int64_t batch = 3;
        const std::size_t size = ag::size_of(t);
        auto rand_bytes = [&](std::size_t n, uint64_t seed) {
          return as_bytes(random_floats(n, seed), t);
        };
        const auto a = rand_bytes(static_cast<std::size_t>(batch * M * K), 1);
        const auto b = rand_bytes(static_cast<std::size_t>(K * N), 2); // broadcast over the batch
        ag::matmul_call c;
        c.type = t;
        c.batch_rank = 1;
        c.batch[0] = batch;
        c.a_batch[0] = M * K;
        c.b_batch[0] = 0;
        c.m = M;
        c.n = N;
        c.k = K;
        // a transposed: stored [K, M] per batch; b transposed: stored [N, K].
        c.a_m = a_t ? 1 : K;
        c.a_k = a_t ? M : 1;
        c.b_k = b_t ? 1 : N;
        c.b_n = b_t ? K : 1;
        std::vector<char> want(static_cast<std::size_t>(batch * M * N) * size);
        c.a = a.data();
        c.b = b.data();
        c.out = want.data();
        ag::cpu::matmul(c);
        on_device da(*s, a.data(), a.size()), db(*s, b.data(), b.size());
        on_device out(*s, nullptr, want.size());
        c.a = da.p;
        c.b = db.p;
        c.out = out.p;
        s->matmul(c);
        const auto got = out.fetch();
        INFO(ag::to_string(t) << (a_t ? ", a transposed" : "") << (b_t ? ", b transposed" : ""));
        check_close(as_floats(got, t), as_floats(want, t),
                    t == dtype::float32 ? 1e-4 : t == dtype::float16 ? 2e-3 : 1.6e-2);
      }
  }
}

TEST_CASE("cuda concat moves every row's parts as the cpu one does, in every element size",
          "[cuda]") {
  auto s = gpu0();
  for (dtype t : {dtype::uint8, dtype::bfloat16, dtype::float32, dtype::int64}) {
    const std::size_t size = ag::size_of(t);
    const uint64_t m = 37, k = 5, n = 0, r = 11;
    std::vector<char> a(m * k * size), c(m * r * size);
    for (std::size_t i = 0; i < a.size(); ++i)
      a[i] = static_cast<char>(i * 7 + 1);
    for (std::size_t i = 0; i < c.size(); ++i)
      c[i] = static_cast<char>(i * 13 + 5);
    ag::row_call call;
    call.kind = op_kind::concat;
    call.type = call.in_type = t;
    call.m = m;
    call.k = k;
    call.n = n;
    call.count = m * (k + n + r);
    std::vector<char> want(call.count * size);
    call.a = a.data();
    call.b = a.data(); // no columns of b
    call.c = c.data();
    call.out = want.data();
    ag::cpu::rows(call);
    on_device da(*s, a.data(), a.size()), dc(*s, c.data(), c.size());
    on_device out(*s, nullptr, want.size());
    call.a = da.p;
    call.b = da.p;
    call.c = dc.p;
    call.out = out.p;
    s->rows(call);
    INFO(ag::to_string(t));
    CHECK(out.fetch() == want);
  }
}
