// Direct transfers end to end in thread mode, on sim devices that are peers of each other
// (graph_option::sim_peers): moves and collectives read the source's memory where it lies, checked
// bit for bit against a host computation, against the store path, in the timeline, and through a
// recorded trace that replays in-process (and is refused, saying why, in process mode).
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>


#include <actorgraph/actorgraph.hpp>

#include "actors/replay.hpp"
#include "cuda/cpu_kernels.hpp"
#include "ipc/trace.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/replay_helpers.hpp"
#include "tests/actors/random_program.hpp"
#include "tests/temp_files.hpp"
#include "tests/helpers/float_kernels.hpp"

using Catch::Contains;
using ag::test::same_bits;
using ag::test::temp_dir;

namespace {

ag::graph_option peers_option(int sims, bool peers = true) {
  ag::graph_option opt;
  for (int i = 0; i < sims; ++i)
    opt.devices.push_back(ag::device::sim(i));
  opt.sim_peers = peers;
  opt.store_bytes = std::size_t{1} << 20;
  opt.transport = ag::test::transport_under_test();
  // A hang guard, stretched under ThreadSanitizer: it takes a store copy for a race with the
  // runners' earlier accesses (CAF's mailboxes, which order them, are invisible to it) and weighs
  // each such report against the suppressions, many times slower than the copy.
  opt.wait_timeout = std::chrono::milliseconds{60000} * ag::test::tsan_slow;
  return opt;
}

std::vector<float> values(std::size_t n, int seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((static_cast<int>(i) * 7 + seed * 13) % 101) * 0.37f - 11.0f;
  return v;
}

// The parts' elementwise sum in their order, as the runtime adds them.
std::vector<float> host_sum(const std::vector<std::vector<float>>& parts) {
  auto sum = parts.front();
  for (std::size_t r = 1; r < parts.size(); ++r)
    ag::test::binary(ag::op_kind::add, sum.data(), parts[r].data(), sum.data(), sum.size());
  return sum;
}

std::string slurp_text(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct group {
  std::vector<ag::tensor> parts;
  std::vector<std::vector<float>> host;
};

group make_group(ag::runtime& rt, std::size_t n) {
  group g;
  for (std::size_t i = 0; i < rt.devices().size(); ++i) {
    g.host.push_back(values(n, static_cast<int>(i)));
    g.parts.push_back(rt.from_vector({static_cast<int64_t>(n)}, g.host.back(), rt.devices()[i]));
  }
  return g;
}

} // namespace

TEST_CASE("every collective over sim peers equals the host computation bit for bit",
          "[peers][collectives]") {
  // 1 element, odd sizes, and sizes past the one-shot bound (256 KiB per part: two-shot).
  for (int sims : {2, 3, 5, 8}) {
    ag::runtime rt{peers_option(sims)};
    const auto w = static_cast<std::size_t>(sims);
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1001}, std::size_t{65537},
                          std::size_t{100003}}) {
      INFO(sims << " peers, " << n << " elements");
      auto g = make_group(rt, n);
      const auto sum = host_sum(g.host);
      const auto reduced = ag::all_reduce(g.parts);
      REQUIRE(reduced.size() == w);
      for (std::size_t q = 0; q < w; ++q) {
        CHECK(reduced[q].device() == rt.devices()[q]);
        CHECK(same_bits(reduced[q].to_vector(), sum));
      }
      const auto gathered = ag::all_gather(g.parts);
      std::vector<float> joined;
      for (const auto& h : g.host)
        joined.insert(joined.end(), h.begin(), h.end());
      for (const auto& t : gathered) {
        CHECK(t.shape() == ag::shape_t{static_cast<int64_t>(w * n)});
        CHECK(same_bits(t.to_vector(), joined));
      }
      const auto copies = ag::broadcast(g.parts[w - 1], rt.devices());
      for (const auto& t : copies)
        CHECK(same_bits(t.to_vector(), g.host[w - 1]));
      if (n % w == 0) {
        const auto blocks = ag::reduce_scatter(g.parts);
        for (std::size_t r = 0; r < w; ++r) {
          const std::vector<float> block(sum.begin() + static_cast<std::ptrdiff_t>(r * n / w),
                                         sum.begin() + static_cast<std::ptrdiff_t>((r + 1) * n / w));
          CHECK(same_bits(blocks[r].to_vector(), block));
        }
      }
    }
    rt.sync();
  }
}

TEST_CASE("reduce_scatter over sim peers gives each device its block of the sum",
          "[peers][collectives]") {
  ag::runtime rt{peers_option(4)};
  for (std::size_t n : {std::size_t{4}, std::size_t{4000}, std::size_t{262144}}) {
    auto g = make_group(rt, n);
    const auto sum = host_sum(g.host);
    const auto blocks = ag::reduce_scatter(g.parts);
    for (std::size_t r = 0; r < 4; ++r) {
      INFO(n << " elements, block " << r);
      CHECK(blocks[r].device() == rt.devices()[r]);
      const std::vector<float> block(sum.begin() + static_cast<std::ptrdiff_t>(r * n / 4),
                                     sum.begin() + static_cast<std::ptrdiff_t>((r + 1) * n / 4));
      CHECK(same_bits(blocks[r].to_vector(), block));
    }
    // A chain without syncs: the gathered blocks are the all_reduce.
    const auto again = ag::all_gather(blocks);
    for (const auto& t : again)
      CHECK(same_bits(t.to_vector(), sum));
  }
}

TEST_CASE("direct and store paths give the same bits for the same program",
          "[peers][collectives]") {
  std::vector<std::vector<float>> results[2];
  for (const bool peers : {true, false}) {
    ag::runtime rt{peers_option(3, peers)};
    auto g = make_group(rt, 30011);
    std::vector<ag::tensor> doubled;
    for (const auto& p : g.parts)
      doubled.push_back(p + p);
    const auto reduced = ag::all_reduce(doubled);
    const auto moved = reduced[0].to(ag::device::sim(2)) * reduced[2];
    results[peers ? 0 : 1].push_back(moved.to_vector());
    for (const auto& t : ag::all_gather(reduced))
      results[peers ? 0 : 1].push_back(t.to_vector());
  }
  REQUIRE(results[0].size() == results[1].size());
  for (std::size_t i = 0; i < results[0].size(); ++i)
    CHECK(same_bits(results[0][i], results[1][i]));
}

TEST_CASE("a direct move larger than the store needs no store and its source may go at once",
          "[peers]") {
  auto opt = peers_option(2);
  opt.store_bytes = std::size_t{1} << 20;
  ag::runtime rt{opt};
  const std::size_t n = std::size_t{1} << 20; // 4 MiB: four times the store
  const auto host = values(n, 5);
  ag::tensor moved;
  {
    auto src = rt.full({static_cast<int64_t>(n)}, 1.5f, ag::device::sim(0));
    moved = src.to(ag::device::sim(1));
  } // the source is released while the move may still be queued
  CHECK(moved.device() == ag::device::sim(1));
  const auto sum = moved.sum().to_vector();
  CHECK(sum.at(0) == Approx(1.5 * static_cast<double>(n)));
  rt.sync();
  CHECK(rt.stats().store_live_bytes == 0);
}

TEST_CASE("the timeline names each transfer's path and why it is not direct",
          "[peers][collectives]") {
  temp_dir dir{"peers-timeline"};
  auto opt = peers_option(2);
  opt.timeline_path = dir.file("timeline.json");
  {
    ag::runtime rt{opt};
    auto a = rt.full({64}, 1.0f, ag::device::sim(0));
    auto b = rt.full({64}, 2.0f, ag::device::sim(1));
    auto c = rt.full({64}, 3.0f, ag::device::cpu());
    (void)a.to(ag::device::sim(1));
    (void)ag::all_reduce({a, b});
    (void)ag::all_reduce({a, c}); // the cpu takes part: through the store
    rt.sync();
  }
  const auto text = slurp_text(dir.file("timeline.json"));
  CHECK_THAT(text, Contains(R"("name":"to","cat":"transfer")"));
  CHECK_THAT(text, Contains(R"("name":"all_reduce","cat":"transfer")"));
  CHECK_THAT(text, Contains(R"("path":"peer")"));
  CHECK_THAT(text, Contains(R"("path":"store","why":"the cpu takes part)"));
}

TEST_CASE("without sim_peers the timeline says sim devices are not peers", "[peers]") {
  temp_dir dir{"peers-off-timeline"};
  auto opt = peers_option(2, false);
  opt.timeline_path = dir.file("timeline.json");
  {
    ag::runtime rt{opt};
    auto a = rt.full({64}, 1.0f, ag::device::sim(0));
    CHECK(a.to(ag::device::sim(1)).to_vector() == std::vector<float>(64, 1.0f));
  }
  CHECK_THAT(slurp_text(dir.file("timeline.json")),
             Contains("sim:0 and sim:1 are not peers (sim devices are peers with "
                      "graph_option::sim_peers)"));
}

TEST_CASE("a random program with moves and collectives over sim peers matches its reference",
          "[peers][collectives]") {
  for (uint32_t seed : {3u, 17u, 29u}) {
    INFO("seed " << seed);
    ag::runtime rt{peers_option(3)};
    const auto r = ag::test::run_random_program(rt, seed, 80);
    for (std::size_t i = 0; i < r.values.size(); ++i) {
      INFO("value " << i);
      CHECK(same_bits(r.values[i], r.reference[i]));
    }
  }
}

TEST_CASE("a trace with direct transfers replays in-process and is refused in process mode",
          "[peers][trace]") {
  temp_dir dir{"peers-trace"};
  auto opt = peers_option(3);
  opt.trace_path = dir.file("peers.trace");
  {
    std::vector<ag::tensor> kept;
    ag::runtime rt{opt};
    auto g = make_group(rt, 5000);
    for (auto& t : ag::all_reduce(g.parts))
      kept.push_back(t);
    kept.push_back(g.parts[0].to(ag::device::sim(2)));
    kept.push_back(ag::all_reduce(g.parts)[1].to(ag::device::cpu()));
    CHECK(kept.back().to_vector() == host_sum(g.host));
    ag::test::run_random_program(rt, 5, 40, &kept);
  }
  const auto t = ag::trace::read_file(dir.file("peers.trace"));
  const auto report = ag::test::replay_file(t, false);
  INFO(report.divergence);
  CHECK(report.matched);
  CHECK(report.collectives >= 2);
  CHECK(report.reads >= 1);
  CHECK_THROWS_WITH(ag::test::replay_file(t, true),
                    Contains("direct transfers between device lanes of one process")
                      && Contains("--mode=inproc"));
}
