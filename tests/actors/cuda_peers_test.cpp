// Direct transfers between CUDA GPUs, in thread mode (peer access) and between child processes
// (CUDA IPC exports): moves and every collective against the host computation, bit for bit, and
// against the store path. Needs two CUDA devices: two GPUs with peer access, or one GPU seen twice
// (AG_CUDA_ORDINALS=0,0: two lanes, or two children, on one GPU).
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "cuda/cpu_kernels.hpp"
#include "cuda/kernel_stream.hpp"
#include "ipc/trace.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/replay_helpers.hpp"
#include "tests/temp_files.hpp"
#include "tests/helpers/float_kernels.hpp"

using Catch::Contains;

namespace {

bool two_peers() {
  if (ag::cuda_device_count() >= 2 && ag::cuda_peer_access(0, 1) && ag::cuda_peer_access(1, 0))
    return true;
  WARN("needs cuda:0 and cuda:1 with peer access (two GPUs, or AG_CUDA_ORDINALS=0,0)");
  return false;
}

ag::graph_option peers_option(bool peers = true, bool process = false) {
  ag::graph_option opt;
  opt.devices = ag::parse_devices("cuda:0,cuda:1");
  opt.peer_transfers = peers;
  opt.per_device_per_process = process; // children read each other's memory through CUDA IPC
  opt.store_bytes = std::size_t{256} << 20;
  opt.transport = ag::test::transport_under_test();
  return opt;
}

std::vector<float> values(std::size_t n, int seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((static_cast<int>(i % 9973) * 7 + seed * 13) % 101) * 0.37f - 11.0f;
  return v;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

} // namespace

TEST_CASE("a direct move between cuda peers keeps every bit and its source may go at once",
          "[cuda][peers]") {
  if (!two_peers())
    return;
  for (const bool process : {false, true}) {
  INFO((process ? "process mode" : "thread mode"));
  ag::test::temp_dir dir{"cuda-peers"};
  auto opt = peers_option(true, process);
  opt.timeline_path = dir.file("timeline.json");
  {
    ag::runtime rt{opt};
    for (std::size_t n : {std::size_t{1}, std::size_t{4099}, std::size_t{3} << 20}) {
      INFO(n << " elements");
      const auto v = values(n, 1);
      ag::tensor moved;
      {
        auto src = rt.from_vector({static_cast<int64_t>(n)}, v, ag::device::cuda(0));
        moved = (src + src).to(ag::device::cuda(1));
      }
      std::vector<float> twice(n);
      ag::test::binary(ag::op_kind::add, v.data(), v.data(), twice.data(), n);
      CHECK(same_bits(moved.to_vector(), twice));
      CHECK(same_bits(moved.to(ag::device::cuda(0)).to_vector(), twice));
    }
    rt.sync();
  }
  std::ifstream in{dir.file("timeline.json")};
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  CHECK_THAT(text, Contains(R"("name":"to","cat":"transfer")") && Contains(R"("path":"peer")"));
  }
}

TEST_CASE("every collective over cuda peers equals the host computation bit for bit",
          "[cuda][peers]") {
  if (!two_peers())
    return;
  for (const bool process : {false, true}) {
  INFO((process ? "process mode" : "thread mode"));
  ag::runtime rt{peers_option(true, process)};
  const std::vector<ag::device> devs{ag::device::cuda(0), ag::device::cuda(1)};
  // One-shot (up to 256 KiB per part) and two-shot sizes, odd ones among them.
  for (std::size_t n : {std::size_t{1}, std::size_t{1000}, std::size_t{65537},
                        std::size_t{1} << 20, (std::size_t{1} << 22) + 2}) {
    INFO(n << " elements");
    const auto h0 = values(n, 3);
    const auto h1 = values(n, 8);
    std::vector<float> sum(n);
    ag::test::binary(ag::op_kind::add, h0.data(), h1.data(), sum.data(), n);
    const std::vector<ag::tensor> parts{
      rt.from_vector({static_cast<int64_t>(n)}, h0, devs[0]),
      rt.from_vector({static_cast<int64_t>(n)}, h1, devs[1])};
    const auto reduced = ag::all_reduce(parts);
    for (std::size_t q = 0; q < 2; ++q) {
      CHECK(reduced[q].device() == devs[q]);
      CHECK(same_bits(reduced[q].to_vector(), sum));
    }
    std::vector<float> joined = h0;
    joined.insert(joined.end(), h1.begin(), h1.end());
    for (const auto& t : ag::all_gather(parts))
      CHECK(same_bits(t.to_vector(), joined));
    for (const auto& t : ag::broadcast(parts[1], devs))
      CHECK(same_bits(t.to_vector(), h1));
    if (n % 2 == 0) {
      const auto blocks = ag::reduce_scatter(parts);
      for (std::size_t r = 0; r < 2; ++r) {
        const std::vector<float> block(sum.begin() + static_cast<std::ptrdiff_t>(r * n / 2),
                                       sum.begin() + static_cast<std::ptrdiff_t>((r + 1) * n / 2));
        CHECK(same_bits(blocks[r].to_vector(), block));
      }
    }
  }
  rt.sync();
  CHECK(rt.stats().store_live_bytes == 0); // the groups and exports went with their operands
  }
}

TEST_CASE("cuda peers and the store path give the same bits for the same program",
          "[cuda][peers]") {
  if (!two_peers())
    return;
  std::vector<std::vector<float>> results[3];
  for (int run = 0; run < 3; ++run) { // thread mode direct, process mode direct, the store
    const bool peers = run < 2;
    ag::runtime rt{peers_option(peers, run == 1)};
    const std::size_t n = 300007;
    std::vector<ag::tensor> parts;
    for (int i = 0; i < 2; ++i) {
      auto x = rt.from_vector({static_cast<int64_t>(n)}, values(n, i), ag::device::cuda(i));
      parts.push_back(x * x);
    }
    const auto reduced = ag::all_reduce(parts);
    results[run].push_back((reduced[0].to(ag::device::cuda(1)) + reduced[1]).to_vector());
    for (const auto& t : ag::all_gather(reduced))
      results[run].push_back(t.to_vector());
  }
  for (int run = 1; run < 3; ++run) {
    REQUIRE(results[0].size() == results[run].size());
    for (std::size_t i = 0; i < results[0].size(); ++i)
      CHECK(same_bits(results[0][i], results[run][i]));
  }
}

TEST_CASE("a child killed before or after it writes its export fails a direct all_reduce on "
          "every participant, and the child that reads that export goes on",
          "[cuda][peers]") {
  if (!two_peers())
    return;
  using namespace ag::test;
  {
    ag::runtime rt{peers_option(true, true)};
    const std::size_t n = 1000;
    const auto h1 = values(n, 2);
    const auto a = rt.from_vector({static_cast<int64_t>(n)}, values(n, 1), ag::device::cuda(0));
    const auto b = rt.from_vector({static_cast<int64_t>(n)}, h1, ag::device::cuda(1));
    rt.sync();
    const pid_t exporter = runner_of_lane(1); // cuda:0
    const pid_t reader = runner_of_lane(2);   // cuda:1
    REQUIRE(exporter > 0);
    REQUIRE(reader > 0);
    std::vector<ag::tensor> reduced;
    SECTION("before: cuda:1 waits in its sum for an export that never comes") {
      ::kill(exporter, SIGSTOP);
      reduced = ag::all_reduce({a, b});
      std::this_thread::sleep_for(std::chrono::milliseconds{300});
      ::kill(exporter, SIGKILL);
    }
    SECTION("after: cuda:0 wrote its export and waits for cuda:1's, which had not looked yet") {
      ::kill(reader, SIGSTOP);
      reduced = ag::all_reduce({a, b});
      std::this_thread::sleep_for(std::chrono::milliseconds{300});
      ::kill(exporter, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds{100});
      ::kill(reader, SIGCONT); // it reads the export as gone, and maps nothing of cuda:0's
    }
    for (const auto& t : reduced) {
      INFO("the result on " << t.device().str());
      CHECK_THROWS_WITH(t.to_vector(), Contains("cuda:0") && Contains("signal 9"));
    }
    CHECK_THROWS_WITH(rt.sync(), Contains("cuda:0"));
    std::vector<float> twice(n);
    ag::test::binary(ag::op_kind::add, h1.data(), h1.data(), twice.data(), n);
    CHECK(same_bits((b + b).to_vector(), twice)); // cuda:1 goes on
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a trace of cuda peers in child processes replays in process mode to its digests, and "
          "is refused in-process",
          "[cuda][peers][trace]") {
  if (!two_peers())
    return;
  ag::test::temp_dir dir{"cuda-peers-trace"};
  auto opt = peers_option(true, true);
  opt.trace_path = dir.file("peers.trace");
  {
    ag::runtime rt{opt};
    std::vector<ag::tensor> kept;
    // One-shot and two-shot sizes; each part read again (its export reused), then released and
    // another exported (a slot used again).
    for (std::size_t n : {std::size_t{3}, std::size_t{100003}, std::size_t{1} << 20}) {
      const std::vector<ag::tensor> parts{
        rt.from_vector({static_cast<int64_t>(n)}, values(n, 4), ag::device::cuda(0)),
        rt.from_vector({static_cast<int64_t>(n)}, values(n, 5), ag::device::cuda(1))};
      for (auto& t : ag::all_reduce(parts))
        kept.push_back(t);
      kept.push_back(ag::all_gather(parts)[0]);
      kept.push_back(parts[1].to(ag::device::cuda(0)));
      kept.back().to_vector(); // a read in the trace
    }
    rt.sync();
  }
  const auto t = ag::trace::read_file(dir.file("peers.trace"));
  for (int round = 0; round < 2; ++round) {
    INFO("replay " << round);
    const auto report = ag::test::replay_file(t, true);
    INFO(report.divergence);
    CHECK(report.matched);
    CHECK(report.collectives == 6);
    CHECK(report.reads >= 3);
  }
  CHECK_THROWS_WITH(ag::test::replay_file(t, false),
                    Contains("direct transfers between child processes")
                      && Contains("--mode=process"));
}
