// Tests of graph/tensor.cpp and the validation in actors/runtime.cpp, on a real runtime in thread
// mode over sim devices: what a user sees when an operator is misused, and that a rejected operator
// leaves the runtime as it was.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

using ag::device;

namespace {

ag::graph_option sim_option() {
  ag::graph_option opt;
  opt.devices = ag::parse_devices("sim:0,sim:1");
  opt.per_device_per_process = false;
  opt.store_bytes = std::size_t{64} << 20;
  opt.wait_timeout = std::chrono::seconds{20};
  opt.transport = ag::test::transport_under_test();
  return opt;
}

const device sim0 = device::sim(0);
const device sim1 = device::sim(1);

} // namespace

TEST_CASE("a tensor reports its shape, element count, device and dtype", "[graph]") {
  ag::runtime rt{sim_option()};
  const auto x = rt.full({2, 3}, 1.5f, sim1);
  CHECK(x.defined());
  CHECK(x.shape() == ag::shape_t{2, 3});
  CHECK(x.numel() == 6);
  CHECK(x.device() == sim1);
  CHECK(x.dtype() == ag::dtype::float32);
  CHECK(x.str() == "float32[2,3] on sim:1");

  const auto scalar = rt.full({}, 2.0f, sim0);
  CHECK(scalar.shape().empty());
  CHECK(scalar.numel() == 1);

  const auto empty = rt.full({4, 0}, 2.0f, device::cpu());
  CHECK(empty.numel() == 0);
  CHECK(empty.str() == "float32[4,0] on cpu");
}

TEST_CASE("a runtime lists the devices it was given", "[graph]") {
  ag::runtime rt{sim_option()};
  CHECK(rt.devices() == std::vector<device>{sim0, sim1});
  CHECK_FALSE(rt.option().per_device_per_process);
}

TEST_CASE("values written with from_vector read back unchanged on every device", "[graph]") {
  ag::runtime rt{sim_option()};
  const std::vector<float> values{1.0f, -2.5f, 3.25f, 0.0f, 1e-30f, -7.0f};
  for (const device d : {device::cpu(), sim0, sim1}) {
    INFO("device " << d);
    CHECK(rt.from_vector({2, 3}, values, d).to_vector() == values);
    CHECK(rt.full({3}, 4.5f, d).to_vector() == std::vector<float>{4.5f, 4.5f, 4.5f});
  }
}

TEST_CASE("to() the device a tensor is on returns a tensor with the same values", "[graph]") {
  ag::runtime rt{sim_option()};
  const std::vector<float> values{1.0f, 2.0f, 3.0f, 4.0f};
  const auto x = rt.from_vector({2, 2}, values, sim0);
  const auto same = x.to(sim0);
  CHECK(same.device() == sim0);
  CHECK(same.shape() == x.shape());
  CHECK(same.to_vector() == values);

  const auto moved = x.to(sim1);
  CHECK(moved.device() == sim1);
  CHECK(moved.shape() == x.shape());
  CHECK(moved.to(sim0).to_vector() == values);
}

TEST_CASE("sum() has shape {} and holds one value", "[graph]") {
  ag::runtime rt{sim_option()};
  const auto s = rt.from_vector({2, 2}, {1.0f, 2.0f, 3.0f, 4.5f}, sim0).sum();
  CHECK(s.shape().empty());
  CHECK(s.numel() == 1);
  CHECK(s.device() == sim0);
  CHECK(s.to_vector() == std::vector<float>{10.5f});

  // An empty tensor sums to zero.
  CHECK(rt.full({0}, 3.0f, sim1).sum().to_vector() == std::vector<float>{0.0f});
}

TEST_CASE("elementwise operators on tensors of different shapes throw ag::error naming the op and "
          "both operands",
          "[graph]") {
  ag::runtime rt{sim_option()};
  const auto x = rt.full({4}, 1.0f, sim0);
  const auto y = rt.full({5}, 1.0f, sim0);
  const auto lhs = Catch::Contains("lhs float32[4] on sim:0");
  const auto rhs = Catch::Contains("rhs float32[5] on sim:0");

  CHECK_THROWS_AS(x + y, ag::error);
  CHECK_THROWS_WITH(x + y, Catch::StartsWith("add: shape mismatch") && lhs && rhs);
  CHECK_THROWS_WITH(x - y, Catch::StartsWith("sub: shape mismatch") && lhs && rhs);
  CHECK_THROWS_WITH(x * y, Catch::StartsWith("mul: shape mismatch") && lhs && rhs);
  CHECK_THROWS_WITH(x / y, Catch::StartsWith("div: shape mismatch") && lhs && rhs);
  // The operands are named in the order they were written.
  CHECK_THROWS_WITH(y + x, Catch::Contains("lhs float32[5] on sim:0")
                             && Catch::Contains("rhs float32[4] on sim:0"));
  // Same element count, different shape: still a mismatch.
  CHECK_THROWS_WITH(rt.full({2, 3}, 1.0f, sim0) + rt.full({3, 2}, 1.0f, sim0),
                    Catch::Contains("float32[2,3] on sim:0")
                      && Catch::Contains("float32[3,2] on sim:0"));
}

TEST_CASE("elementwise operators on tensors of different devices throw ag::error naming both "
          "devices",
          "[graph]") {
  ag::runtime rt{sim_option()};
  const auto x = rt.full({4}, 1.0f, sim0);
  const auto y = rt.full({4}, 1.0f, sim1);
  const auto z = rt.full({4}, 1.0f, device::cpu());
  CHECK_THROWS_AS(x + y, ag::error);
  CHECK_THROWS_WITH(x + y, Catch::StartsWith("add: device mismatch")
                             && Catch::Contains("float32[4] on sim:0")
                             && Catch::Contains("float32[4] on sim:1"));
  CHECK_THROWS_WITH(z * x, Catch::StartsWith("mul: device mismatch")
                             && Catch::Contains("float32[4] on cpu")
                             && Catch::Contains("float32[4] on sim:0"));
}

TEST_CASE("matmul of shapes that do not fit throws ag::error naming both", "[graph]") {
  ag::runtime rt{sim_option()};
  const auto v = rt.full({4}, 1.0f, sim0);
  const auto m = rt.full({4, 2}, 1.0f, sim0);
  const auto t = rt.full({2, 4, 2}, 1.0f, sim0);
  const auto s = rt.full({}, 1.0f, sim0);
  CHECK_THROWS_WITH(s.matmul(s), Catch::StartsWith("matmul: shapes do not fit")
                                   && Catch::Contains("at least one dimension")
                                   && Catch::Contains("lhs float32[] on sim:0"));
  CHECK_THROWS_WITH(m.matmul(v), Catch::Contains("(2 vs 4") && Catch::Contains("rhs float32[4]"));
  CHECK_THROWS_WITH(t.matmul(t), Catch::Contains("(2 vs 4") && Catch::Contains("float32[2,4,2]"));
  CHECK_THROWS_WITH(rt.full({3, 2, 4}, 1.0f, sim0).matmul(rt.full({2, 4, 2}, 1.0f, sim0)),
                    Catch::Contains("batch dimensions") && Catch::Contains("[3] vs [2]"));
}

TEST_CASE("matmul with different inner dimensions throws ag::error naming both sizes", "[graph]") {
  ag::runtime rt{sim_option()};
  const auto a = rt.full({2, 3}, 1.0f, sim0);
  const auto b = rt.full({4, 5}, 1.0f, sim0);
  CHECK_THROWS_AS(a.matmul(b), ag::error);
  CHECK_THROWS_WITH(a.matmul(b), Catch::StartsWith("matmul: shapes do not fit")
                                   && Catch::Contains("(3 vs 4 in the inner dimension)")
                                   && Catch::Contains("lhs float32[2,3] on sim:0")
                                   && Catch::Contains("rhs float32[4,5] on sim:0"));
  // [2,3] x [2,3]: equal shapes are not enough.
  CHECK_THROWS_WITH(a.matmul(a), Catch::Contains("(3 vs 2"));
}

TEST_CASE("matmul of operands on different devices throws ag::error naming both", "[graph]") {
  ag::runtime rt{sim_option()};
  const auto a = rt.full({2, 3}, 1.0f, sim0);
  const auto b = rt.full({3, 2}, 1.0f, sim1);
  CHECK_THROWS_WITH(a.matmul(b), Catch::StartsWith("matmul: device mismatch")
                                   && Catch::Contains("float32[2,3] on sim:0")
                                   && Catch::Contains("float32[3,2] on sim:1"));
}

TEST_CASE("operators on tensors of two different runtimes throw ag::error", "[graph]") {
  ag::runtime one{sim_option()};
  ag::runtime two{sim_option()};
  const auto x = one.full({2, 2}, 1.0f, sim0);
  const auto y = two.full({2, 2}, 1.0f, sim0);
  CHECK_THROWS_AS(x + y, ag::error);
  CHECK_THROWS_WITH(x + y, Catch::StartsWith("add: runtime mismatch"));
  CHECK_THROWS_WITH(x.matmul(y), Catch::StartsWith("matmul: runtime mismatch"));
}

TEST_CASE("a rejected operator submits nothing and leaves the runtime usable", "[graph]") {
  ag::runtime rt{sim_option()};
  const auto x = rt.full({4}, 2.0f, sim0);
  const auto y = rt.full({5}, 1.0f, sim0);
  const auto cx = rt.full({4}, 3.0f, device::cpu());
  rt.sync();
  const auto before = rt.stats();

  CHECK_THROWS_AS(x + y, ag::error);
  CHECK_THROWS_AS(x.matmul(y), ag::error);
  CHECK_THROWS_AS(rt.from_vector({2}, {1.0f}, sim0), ag::error);
  CHECK_THROWS_AS(rt.full({2}, 1.0f, device::sim(7)), ag::error);
  CHECK_THROWS_AS(x.to(device::sim(7)), ag::error);
  CHECK_THROWS_AS(cx * x, ag::error);
  rt.sync();

  const auto after = rt.stats();
  CHECK(after.operators == before.operators);
  CHECK(after.store_live_bytes == before.store_live_bytes);
  CHECK(after.device_live_bytes == before.device_live_bytes);
  CHECK((x + x).to_vector() == std::vector<float>{4.0f, 4.0f, 4.0f, 4.0f});
}

TEST_CASE("from_vector with the wrong number of values throws ag::error naming both counts",
          "[graph]") {
  ag::runtime rt{sim_option()};
  CHECK_THROWS_AS(rt.from_vector({2, 2}, {1.0f, 2.0f, 3.0f}, sim0), ag::error);
  CHECK_THROWS_WITH(rt.from_vector({2, 2}, {1.0f, 2.0f, 3.0f}, sim0),
                    Catch::StartsWith("from_vector")
                      && Catch::Contains("[2,2] needs 4 values, got 3"));
  CHECK_THROWS_WITH(rt.from_vector({3}, {1.0f, 2.0f, 3.0f, 4.0f}, device::cpu()),
                    Catch::Contains("needs 3 values, got 4"));
  CHECK_THROWS_WITH(rt.from_vector({}, {}, sim1), Catch::Contains("needs 1 values, got 0"));
  // The empty case is consistent: no elements, no values.
  CHECK(rt.from_vector({0, 3}, {}, sim1).to_vector().empty());
}

TEST_CASE("a shape with a negative dimension throws ag::error naming the shape", "[graph]") {
  ag::runtime rt{sim_option()};
  CHECK_THROWS_AS(rt.full({2, -1}, 1.0f, sim0), ag::error);
  CHECK_THROWS_WITH(rt.full({2, -1}, 1.0f, sim0),
                    Catch::StartsWith("full") && Catch::Contains("negative dimension")
                      && Catch::Contains("[2,-1]"));
  CHECK_THROWS_WITH(rt.from_vector({-3}, {}, sim0), Catch::Contains("[-3]"));
}

TEST_CASE("full and from_vector on a device the runtime does not have throw ag::error naming it",
          "[graph]") {
  ag::runtime rt{sim_option()};
  CHECK_THROWS_AS(rt.full({2}, 1.0f, device::sim(7)), ag::error);
  CHECK_THROWS_WITH(rt.full({2}, 1.0f, device::sim(7)),
                    Catch::StartsWith("full: sim:7 is not a device of this runtime")
                      && Catch::Contains("cpu,sim:0,sim:1"));
  CHECK_THROWS_WITH(rt.from_vector({2}, {1.0f, 2.0f}, device::sim(7)),
                    Catch::StartsWith("from_vector: sim:7 is not a device of this runtime"));
  CHECK_THROWS_WITH(rt.full({2}, 1.0f, device::cuda(0)),
                    Catch::StartsWith("full: cuda:0 is not a device of this runtime"));
  CHECK_THROWS_WITH(rt.from_vector({2}, {1.0f, 2.0f}, device::cuda(0)),
                    Catch::StartsWith("from_vector: cuda:0 is not a device of this runtime"));
}

TEST_CASE("to() a device the runtime does not have throws ag::error naming it and the tensor",
          "[graph]") {
  ag::runtime rt{sim_option()};
  const auto x = rt.full({3}, 1.0f, sim0);
  CHECK_THROWS_AS(x.to(device::sim(7)), ag::error);
  CHECK_THROWS_WITH(x.to(device::sim(7)),
                    Catch::StartsWith("to: sim:7 is not a device of this runtime")
                      && Catch::Contains("float32[3] on sim:0"));
  CHECK_THROWS_WITH(x.to(device::cuda(0)), Catch::Contains("cuda:0 is not a device"));
}

TEST_CASE("a runtime is not built from an unknown device name", "[graph]") {
  ag::graph_option opt = sim_option();
  CHECK_THROWS_AS(opt.devices = ag::parse_devices("sim:0,gpu:1"), ag::error);
  CHECK_THROWS_WITH(opt.devices = ag::parse_devices("sim:0,gpu:1"), Catch::Contains("gpu:1"));
}

TEST_CASE("a runtime is not built from a device list it cannot run", "[graph]") {
  ag::graph_option opt = sim_option();

  opt.devices = {device::sim(-1)};
  CHECK_THROWS_AS(ag::runtime{opt}, ag::error);
  CHECK_THROWS_WITH(ag::runtime{opt}, Catch::Contains("sim:-1") && Catch::Contains("negative"));

  opt.devices = {sim0, sim1, sim0};
  CHECK_THROWS_WITH(ag::runtime{opt}, Catch::Contains("sim:0") && Catch::Contains("twice"));

  // No machine has this many GPUs, with or without a CUDA build.
  opt.devices = {device::cuda(4096)};
  CHECK_THROWS_WITH(ag::runtime{opt}, Catch::Contains("cuda:4096")
                                        && Catch::Contains("CUDA device(s) visible"));
}

TEST_CASE("a runtime with a non-positive wait_timeout throws ag::error", "[graph]") {
  ag::graph_option opt = sim_option();
  opt.wait_timeout = std::chrono::milliseconds{0};
  CHECK_THROWS_AS(ag::runtime{opt}, ag::error);
  CHECK_THROWS_WITH(ag::runtime{opt}, Catch::Contains("wait_timeout"));
}

TEST_CASE("process mode with a runner_path that is not a program throws ag::error naming it",
          "[graph]") {
  ag::graph_option opt = sim_option();
  opt.per_device_per_process = true;
  opt.runner_path = "/nonexistent/ag-runner";
  CHECK_THROWS_WITH(ag::runtime{opt}, Catch::Contains("/nonexistent/ag-runner"));
}

TEST_CASE("a default-constructed tensor throws ag::error calling itself undefined when used",
          "[graph]") {
  ag::runtime rt{sim_option()};
  const ag::tensor none;
  const auto x = rt.full({2, 2}, 1.0f, sim0);
  CHECK_FALSE(none.defined());
  CHECK(none.str() == "undefined tensor");

  const auto undefined = Catch::Contains("undefined");
  CHECK_THROWS_AS(x + none, ag::error);
  CHECK_THROWS_WITH(x + none, Catch::StartsWith("add") && undefined);
  CHECK_THROWS_WITH(none - x, Catch::StartsWith("sub") && undefined);
  CHECK_THROWS_WITH(none * none, Catch::StartsWith("mul") && undefined);
  CHECK_THROWS_WITH(x / none, Catch::StartsWith("div") && undefined);
  CHECK_THROWS_WITH(x.matmul(none), Catch::StartsWith("matmul") && undefined);
  CHECK_THROWS_WITH(none.matmul(x), Catch::StartsWith("matmul") && undefined);
  CHECK_THROWS_WITH(none.relu(), Catch::StartsWith("relu") && undefined);
  CHECK_THROWS_WITH(none.sum(), Catch::StartsWith("sum") && undefined);
  CHECK_THROWS_WITH(none.to(sim1), Catch::StartsWith("to") && undefined);
  CHECK_THROWS_WITH(none.to_vector(), Catch::StartsWith("to_vector") && undefined);
  CHECK_THROWS_WITH(none.shape(), undefined);
  CHECK_THROWS_WITH(none.numel(), undefined);
  CHECK_THROWS_WITH(none.device(), undefined);
  CHECK_THROWS_WITH(none.dtype(), undefined);
  // The defined operand still works.
  CHECK((x + x).to_vector() == std::vector<float>{2.0f, 2.0f, 2.0f, 2.0f});
}

TEST_CASE("a tensor that outlives its runtime throws ag::error when used and is destroyed "
          "harmlessly",
          "[graph]") {
  std::optional<ag::runtime> rt{std::in_place, sim_option()};
  auto x = rt->from_vector({2, 2}, {1.0f, 2.0f, 3.0f, 4.0f}, sim0);
  auto y = rt->full({2, 2}, 1.0f, sim0);
  auto c = rt->full({2}, 1.0f, device::cpu());
  auto pending = x + y; // still queued or just run when the runtime goes
  rt.reset();

  const auto outlived = Catch::Contains("outlived its runtime");
  CHECK_THROWS_AS(x + y, ag::error);
  CHECK_THROWS_WITH(x + y, Catch::StartsWith("add") && outlived);
  CHECK_THROWS_WITH(x - y, Catch::StartsWith("sub") && outlived);
  CHECK_THROWS_WITH(x * y, Catch::StartsWith("mul") && outlived);
  CHECK_THROWS_WITH(x / y, Catch::StartsWith("div") && outlived);
  CHECK_THROWS_WITH(x.matmul(y), Catch::StartsWith("matmul") && outlived);
  CHECK_THROWS_WITH(x.relu(), Catch::StartsWith("relu") && outlived);
  CHECK_THROWS_WITH(x.sum(), Catch::StartsWith("sum") && outlived);
  CHECK_THROWS_WITH(x.to(sim1), Catch::StartsWith("to") && outlived);
  CHECK_THROWS_WITH(x.to(device::cpu()), outlived);
  CHECK_THROWS_WITH(x.to_vector(), outlived);
  CHECK_THROWS_WITH(c.to_vector(), Catch::StartsWith("to_vector") && outlived
                                     && Catch::Contains("[2] on cpu"));
  CHECK_THROWS_WITH(pending.to_vector(), outlived);

  // Metadata needs no runtime.
  CHECK(x.shape() == ag::shape_t{2, 2});
  CHECK(x.numel() == 4);
  CHECK(x.device() == sim0);
  CHECK(x.str() == "float32[2,2] on sim:0");

  // Releasing the handles after the runtime is gone does nothing.
  x = ag::tensor{};
  y = ag::tensor{};
  c = ag::tensor{};
  pending = ag::tensor{};
  CHECK_FALSE(x.defined());
}
