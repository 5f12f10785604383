// Thread mode on a real GPU: the runtime's operators on cuda:0 against the CPU reference kernels,
// and moves between cuda:0, a sim device and the cpu. Runs where a CUDA device is visible.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>
#include <unistd.h>
#include <string>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "cuda/cpu_kernels.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/helpers/float_kernels.hpp"

namespace {

ag::graph_option cuda_option() {
  ag::graph_option opt;
  opt.devices = ag::parse_devices("cuda:0,sim:0");
  opt.transport = ag::test::transport_under_test();
  return opt;
}

std::vector<float> ramp(std::size_t n, float start, float step) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = start + step * static_cast<float>(i % 1000);
  return v;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

} // namespace

TEST_CASE("elementwise operators on cuda:0 match the reference bit for bit", "[cuda]") {
  ag::runtime rt{cuda_option()};
  const std::size_t n = 1 << 20;
  const auto av = ramp(n, -3.0f, 0.01f);
  const auto bv = ramp(n, 0.5f, 0.02f);
  std::vector<float> t(n), u(n), ref(n), r(n);
  ag::test::binary(ag::op_kind::add, av.data(), bv.data(), t.data(), n);
  ag::test::binary(ag::op_kind::mul, t.data(), av.data(), t.data(), n);
  ag::test::binary(ag::op_kind::div, bv.data(), av.data(), u.data(), n);
  ag::test::binary(ag::op_kind::sub, t.data(), u.data(), ref.data(), n);
  ag::test::relu(ref.data(), r.data(), n);
  auto a = rt.from_vector({int64_t(n)}, av, ag::device::cuda(0));
  auto b = rt.from_vector({int64_t(n)}, bv, ag::device::cuda(0));
  auto c = (a + b) * a - b / a;
  CHECK(same_bits(c.to_vector(), ref));
  CHECK(same_bits(c.relu().to_vector(), r));
  std::vector<float> s(1);
  ag::cpu::sum(r.data(), s.data(), n);
  const float got = c.relu().sum().to_vector().at(0);
  CHECK(std::abs(got - s[0]) <= 1e-5f * std::abs(s[0]));
}

TEST_CASE("matmul and relu on cuda:0 are within 1e-4 of the reference", "[cuda]") {
  ag::runtime rt{cuda_option()};
  const std::size_t m = 64, k = 256, n = 512;
  const auto xv = ramp(m * k, -1.0f, 0.002f);
  const auto wv = ramp(k * n, 0.3f, -0.0007f);
  std::vector<float> ref(m * n);
  ag::cpu::matmul(xv.data(), wv.data(), ref.data(), m, k, n);
  auto x = rt.from_vector({int64_t(m), int64_t(k)}, xv, ag::device::cuda(0));
  auto w = rt.from_vector({int64_t(k), int64_t(n)}, wv, ag::device::cuda(0));
  const auto got = x.matmul(w).to_vector();
  REQUIRE(got.size() == ref.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - ref[i]) / std::max(1.0, std::abs(double(ref[i]))));
  CHECK(worst < 1e-4);
}

TEST_CASE("moves between cuda:0, sim:0 and the cpu keep every bit", "[cuda]") {
  ag::runtime rt{cuda_option()};
  const auto v = ramp(300000, -5.0f, 0.013f);
  auto a = rt.from_vector({300000}, v, ag::device::cpu());
  auto b = a.to(ag::device::cuda(0)).to(ag::device::sim(0)).to(ag::device::cuda(0));
  CHECK(same_bits(b.to_vector(), v));
  CHECK(same_bits(b.to(ag::device::sim(0)).to_vector(), v));
}

TEST_CASE("a long stream of operators on cuda:0 runs and frees its memory", "[cuda]") {
  ag::runtime rt{cuda_option()};
  {
    auto one = rt.full({4096}, 1.0f, ag::device::cuda(0));
    auto x = rt.full({4096}, 0.0f, ag::device::cuda(0));
    for (int i = 0; i < 20000; ++i)
      x = x + one;
    CHECK(x.to_vector() == std::vector<float>(4096, 20000.0f));
  }
  rt.sync();
  CHECK(rt.stats().device_live_bytes == 0);
  CHECK(rt.stats().store_live_bytes == 0);
}

TEST_CASE("process mode on cuda:0 gives the same bits as thread mode", "[cuda]") {
  const std::size_t n = 1 << 18;
  const auto av = ramp(n, -3.0f, 0.01f);
  const auto bv = ramp(n, 0.5f, 0.02f);
  const auto xv = ramp(64 * 256, -1.0f, 0.002f);
  const auto wv = ramp(256 * 128, 0.3f, -0.0007f);
  auto compute = [&](bool process) {
    auto opt = cuda_option();
    opt.per_device_per_process = process;
    ag::runtime rt{opt};
    auto a = rt.from_vector({int64_t(n)}, av, ag::device::cpu()).to(ag::device::cuda(0));
    auto b = rt.from_vector({int64_t(n)}, bv, ag::device::cuda(0));
    auto c = ((a + b) * a - b / a).relu();
    auto x = rt.from_vector({64, 256}, xv, ag::device::cuda(0));
    auto w = rt.from_vector({256, 128}, wv, ag::device::sim(0)).to(ag::device::cuda(0));
    return std::make_pair(c.to_vector(), x.matmul(w).to_vector());
  };
  const auto t = compute(false);
  const auto p = compute(true);
  CHECK(same_bits(t.first, p.first));
  CHECK(same_bits(t.second, p.second));
}

TEST_CASE("a child whose GPU cannot be used fails start-up naming the device and the cause",
          "[cuda]") {
  // A runner that sees no GPU: the child's CUDA stream fails to start, as a broken driver would.
  char dir[] = "/tmp/ag-test-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const std::string script = std::string{dir} + "/no-gpu-runner";
  if (FILE* f = std::fopen(script.c_str(), "w")) {
    std::fprintf(f, "#!/bin/sh\nCUDA_VISIBLE_DEVICES=none exec '%s' \"$@\"\n",
                 ag::test::beside_this_program("ag-runner", AG_TEST_RUNNER).c_str());
    std::fclose(f);
  }
  ::chmod(script.c_str(), 0700);
  auto opt = cuda_option();
  opt.per_device_per_process = true;
  opt.runner_path = script;
  opt.wait_timeout = std::chrono::seconds{20};
  CHECK_THROWS_WITH(ag::runtime{opt}, Catch::Contains("cuda:0") && Catch::Contains("exited with code 4"));
  ::unlink(script.c_str());
  ::rmdir(dir);
}

TEST_CASE("a tensor larger than the store reaches, crosses and leaves cuda:0 in pieces, in both "
          "modes",
          "[cuda]") {
  for (bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    auto opt = cuda_option();
    opt.per_device_per_process = process;
    opt.store_bytes = std::size_t{8} << 20; // 8 MiB, the tensor is 40 MiB
    {
      ag::runtime rt{opt};
      const auto values = ramp(10 * 1024 * 1024, -3.0f, 0.25f);
      const auto a = rt.from_vector({int64_t(values.size())}, values, ag::device::cuda(0));
      const auto doubled = a + a;
      const auto on_sim = doubled.to(ag::device::sim(0));
      const auto back = on_sim.to(ag::device::cuda(0)).to_vector();
      std::vector<float> want(values.size());
      for (std::size_t i = 0; i < values.size(); ++i)
        want[i] = values[i] * 2.0f;
      CHECK(same_bits(back, want));
      CHECK(same_bits(a.to_vector(), values));
    }
    CHECK(ag::test::runner_children().empty());
    CHECK(ag::test::my_shm().empty());
  }
}
