// The files the CUDA driver makes in /dev/shm for interprocess events (cuda.shm.<uid>.<pid>.<n>):
// children that read each other's memory leave none behind, whether they exit in order or one is
// killed, also where the driver names them with pids of another pid namespace than the
// controller's (the children name their files in their start-up segments). Needs two CUDA devices
// that are peers: two GPUs, or one seen twice (AG_CUDA_ORDINALS=0,0).
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <string>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "cuda/kernel_stream.hpp"
#include "tests/actors/process_helpers.hpp"

using Catch::Contains;
using namespace std::chrono_literals;
using ag::test::list_dir;

namespace {

// The driver's files of this user in /dev/shm now.
std::vector<std::string> driver_files() {
  const std::string prefix = "cuda.shm." + std::to_string(::getuid()) + ".";
  std::vector<std::string> out;
  for (const auto& n : list_dir("/dev/shm"))
    if (n.rfind(prefix, 0) == 0)
      out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> made_since(const std::vector<std::string>& before) {
  std::vector<std::string> out;
  for (const auto& n : driver_files())
    if (!std::binary_search(before.begin(), before.end(), n))
      out.push_back(n);
  return out;
}

ag::graph_option children_on_peers() {
  ag::graph_option opt;
  opt.devices = ag::parse_devices("cuda:0,cuda:1");
  opt.per_device_per_process = true; // the children read each other's memory through CUDA IPC
  opt.store_bytes = std::size_t{64} << 20;
  opt.wait_timeout = 20000ms;
  opt.transport = ag::test::transport_under_test();
  return opt;
}

// Work that makes both children export their memory: moves both ways and an all_reduce.
void read_each_other(ag::runtime& rt) {
  const auto c0 = ag::device::cuda(0);
  const auto c1 = ag::device::cuda(1);
  auto a = rt.full({4096}, 1.0f, c0);
  auto b = rt.full({4096}, 2.0f, c1);
  CHECK((a.to(c1) + b.to(c0).to(c1)).to_vector() == std::vector<float>(4096, 3.0f));
  const auto r = ag::all_reduce({a, b});
  CHECK(r[0].to_vector() == std::vector<float>(4096, 3.0f));
  rt.sync();
}

} // namespace

TEST_CASE("children that read each other's memory leave no file of the CUDA driver in /dev/shm, "
          "whether they exit in order or one is killed",
          "[cuda]") {
  if (ag::cuda_device_count() < 2 || !ag::cuda_peer_access(0, 1) || !ag::cuda_peer_access(1, 0)) {
    WARN("needs cuda:0 and cuda:1 with peer access (two GPUs, or AG_CUDA_ORDINALS=0,0)");
    return;
  }
  const auto before = driver_files();
  SECTION("in order") {
    {
      ag::runtime rt{children_on_peers()};
      read_each_other(rt);
      CHECK_FALSE(made_since(before).empty()); // the driver made some: the test sees them
    }
    CHECK(made_since(before).empty());
  }
  SECTION("one killed") {
    {
      ag::runtime rt{children_on_peers()};
      read_each_other(rt);
      const pid_t child = ag::test::runner_of_lane(1);
      REQUIRE(child > 0);
      REQUIRE(::kill(child, SIGKILL) == 0);
      CHECK_THROWS_WITH(rt.full({4}, 1.0f, ag::device::cuda(0)).to_vector(), Contains("cuda:0"));
    }
    CHECK(made_since(before).empty());
  }
  CHECK(ag::test::runner_children().empty());
}
