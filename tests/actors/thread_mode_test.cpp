// Thread mode end to end on sim:0,sim:1: operators, moves in every direction, a random program
// checked bit for bit against the CPU reference kernels, and the failure paths a user sees.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <actorgraph/actorgraph.hpp>

#include "cuda/cpu_kernels.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/random_program.hpp"
#include "tests/helpers/float_kernels.hpp"

namespace {

ag::graph_option sim_option(const char* devices = "sim:0,sim:1") {
  ag::graph_option opt;
  opt.devices = ag::parse_devices(devices);
  opt.transport = ag::test::transport_under_test();
  return opt;
}

std::vector<float> iota(std::size_t n, float start, float step) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = start + step * static_cast<float>(i);
  return v;
}

using ag::test::same_bits;

} // namespace

TEST_CASE("a runtime over sim devices is ready when constructed and lists its devices",
          "[actors]") {
  ag::runtime rt{sim_option()};
  CHECK(rt.devices() == std::vector<ag::device>{ag::device::sim(0), ag::device::sim(1)});
  rt.sync();
}

TEST_CASE("auto picks sim:0,sim:1 on a machine without GPUs", "[actors]") {
  ag::graph_option opt; // no devices: auto
  opt.transport = ag::test::transport_under_test();
  ag::runtime rt{opt};
  if (rt.devices().front().type == ag::device::kind::cuda)
    SUCCEED("this machine has GPUs: auto picked them");
  else
    CHECK(rt.devices() == std::vector<ag::device>{ag::device::sim(0), ag::device::sim(1)});
}

TEST_CASE("elementwise operators on every device give the reference result", "[actors]") {
  ag::runtime rt{sim_option()};
  const auto av = iota(4096, -3.0f, 0.25f);
  const auto bv = iota(4096, 1.0f, 0.5f);
  std::vector<float> ref(4096), t(4096), u(4096);
  ag::test::binary(ag::op_kind::add, av.data(), bv.data(), t.data(), 4096);    // a + b
  ag::test::binary(ag::op_kind::mul, t.data(), av.data(), t.data(), 4096);     // (a + b) * a
  ag::test::binary(ag::op_kind::div, bv.data(), av.data(), u.data(), 4096);    // b / a
  ag::test::binary(ag::op_kind::sub, t.data(), u.data(), ref.data(), 4096);    // ... - b / a
  for (auto d : {ag::device::cpu(), ag::device::sim(0), ag::device::sim(1)}) {
    auto a = rt.from_vector({4096}, av, d);
    auto b = rt.from_vector({4096}, bv, d);
    auto c = (a + b) * a - b / a;
    CHECK(c.device() == d);
    CHECK(same_bits(c.to_vector(), ref));
  }
}

TEST_CASE("moves between cpu and devices keep every bit", "[actors]") {
  ag::runtime rt{sim_option()};
  const auto v = iota(10000, -7.0f, 0.001f);
  auto a = rt.from_vector({100, 100}, v, ag::device::cpu());
  auto b = a.to(ag::device::sim(0)).to(ag::device::sim(1)).to(ag::device::cpu());
  auto c = b.to(ag::device::sim(1)).to(ag::device::sim(0));
  CHECK(b.device() == ag::device::cpu());
  CHECK(c.shape() == ag::shape_t{100, 100});
  CHECK(same_bits(b.to_vector(), v));
  CHECK(same_bits(c.to_vector(), v)); // to_vector moves to the cpu itself
  CHECK(a.to(ag::device::cpu()).to_vector() == v);
}

TEST_CASE("matmul, relu and sum match the reference kernels on sim devices", "[actors]") {
  ag::runtime rt{sim_option()};
  const auto xv = iota(17 * 33, -1.0f, 0.01f);
  const auto wv = iota(33 * 9, 0.5f, -0.003f);
  std::vector<float> h(17 * 9), r(17 * 9), s(1);
  ag::cpu::matmul(xv.data(), wv.data(), h.data(), 17, 33, 9);
  ag::test::relu(h.data(), r.data(), r.size());
  ag::cpu::sum(r.data(), s.data(), r.size());
  auto x = rt.from_vector({17, 33}, xv, ag::device::sim(1));
  auto w = rt.from_vector({33, 9}, wv, ag::device::sim(1));
  auto m = x.matmul(w).relu();
  auto total = m.sum();
  CHECK(m.shape() == ag::shape_t{17, 9});
  CHECK(total.shape().empty());
  CHECK(same_bits(m.to_vector(), r));
  CHECK(same_bits(total.to_vector(), s));
}

TEST_CASE("random programs over cpu and two sim devices match the reference kernels",
          "[actors]") {
  ag::runtime rt{sim_option()};
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    INFO("program seed " << seed);
    const auto r = ag::test::run_random_program(rt, seed, 300);
    for (std::size_t v = 0; v < r.values.size(); ++v)
      CHECK(same_bits(r.values[v], r.reference[v]));
  }
  rt.sync();
  CHECK(rt.stats().store_live_bytes == 0);
  CHECK(rt.stats().device_live_bytes == 0);
}

TEST_CASE("a full store is an ag::error naming the op, from sync and to_vector", "[actors]") {
  auto opt = sim_option("sim:0");
  opt.store_bytes = 1 << 20;
  ag::runtime rt{opt};
  auto big = rt.from_vector({1 << 19}, std::vector<float>(1 << 19, 1.0f), ag::device::cpu());
  CHECK_THROWS_WITH(rt.sync(), Catch::Contains("store full") && Catch::Contains("from_vector"));
  CHECK_THROWS_AS(big.to_vector(), ag::error);
}

TEST_CASE("a CUDA device this machine lacks is refused at construction", "[actors]") {
  auto opt = sim_option("cuda:63");
  CHECK_THROWS_WITH(ag::runtime{opt}, Catch::Contains("cuda:63"));
}

TEST_CASE("a runtime can use the application's actor system", "[actors]") {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  {
    ag::runtime rt{sys, sim_option("sim:3")};
    auto a = rt.full({8}, 2.5f, ag::device::sim(3));
    CHECK((a * a).to_vector() == std::vector<float>(8, 6.25f));
  }
  // The runtime is gone and the system still works: another one starts on it.
  ag::runtime again{sys, sim_option("sim:0")};
  CHECK(again.full({1}, 1.0f, ag::device::cpu()).to_vector() == std::vector<float>{1.0f});
}

TEST_CASE("a runtime destroyed with work in flight stops without waiting forever", "[actors]") {
  ag::tensor survivor;
  {
    ag::runtime rt{sim_option()};
    auto x = rt.full({256, 256}, 0.01f, ag::device::sim(0));
    for (int i = 0; i < 20; ++i)
      x = x.matmul(x);
    survivor = x;
  }
  CHECK_THROWS_WITH(survivor.to_vector(), Catch::Contains("outlived its runtime"));
}
