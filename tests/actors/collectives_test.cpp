// Collectives end to end (include/actorgraph/collectives.hpp, actors/planner_collective.cpp):
// all_reduce, broadcast, all_gather and reduce_scatter over sim devices and the cpu, in thread
// mode and in process mode with real children, checked bit for bit against a host computation
// that adds the parts in the same order; the errors thrown at the call; ordering without syncs;
// releases; a child killed while a collective is in flight; the trace record and its replay; the
// timeline's path notes.
#include <catch2/catch.hpp>

#define BOOST_BIND_GLOBAL_PLACEHOLDERS // Boost 1.74's property_tree pulls in the deprecated bind.hpp
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <functional>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <actorgraph/actorgraph.hpp>

#include "actors/replay.hpp"
#include "ipc/trace.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/replay_helpers.hpp"
#include "tests/actors/random_program.hpp"
#include "tests/temp_files.hpp"

using namespace ag::test;
using namespace std::chrono_literals;
using Catch::Contains;

namespace {

using ag::device;
using ag::shape_t;
using ag::tensor;
using floats = std::vector<float>;

// sim:0 .. sim:(sims - 1), thread or process mode; the wait deadline is only a hang guard.
ag::graph_option option(int sims, bool process, std::size_t store_bytes = std::size_t{1} << 20,
                        std::chrono::milliseconds wait = 30s) {
  ag::graph_option opt;
  for (int i = 0; i < sims; ++i)
    opt.devices.push_back(device::sim(i));
  opt.per_device_per_process = process;
  opt.store_bytes = store_bytes;
  // Hang guards, stretched where ThreadSanitizer slows every process many times over.
  opt.wait_timeout = wait * ag::test::tsan_slow;
  opt.progress_timeout = std::chrono::milliseconds{10000} * ag::test::tsan_slow;
  opt.transport = transport_under_test();
  return opt;
}

std::vector<device> sims(int n) {
  std::vector<device> out;
  for (int i = 0; i < n; ++i)
    out.push_back(device::sim(i));
  return out;
}

// The planner's chunk (elements) for a collective of `parts` parts over a store of `store` bytes.
int64_t chunk_of(std::size_t store, std::size_t parts) {
  return std::max<int64_t>(1, static_cast<int64_t>(store / 4 / (parts + 1) / 4));
}

int64_t numel(const shape_t& s) {
  int64_t n = 1;
  for (auto d : s)
    n *= d;
  return n;
}

// Deterministic values of widely different magnitudes (2^-18 .. 2^16, both signs), so that adding
// them in another order than the parts' would round differently.
floats values(std::size_t n, uint32_t seed) {
  floats v(n);
  uint64_t s = (uint64_t{seed} + 1) * 0x9E3779B97F4A7C15ull;
  for (auto& x : v) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    const uint64_t h = s * 2685821657736338717ull;
    const int mant = static_cast<int>((h >> 40) & 0xFFFFF) - (1 << 19); // +-2^19
    const int e = static_cast<int>((h >> 20) & 15) - 22;                // 2^-22 .. 2^-7
    x = std::ldexp(static_cast<float>(mant), e);
  }
  return v;
}

// ((p0 + p1) + p2) + ... in float32, as the cpu lane adds them.
floats host_sum(const std::vector<floats>& parts) {
  floats acc = parts.front();
  for (std::size_t r = 1; r < parts.size(); ++r)
    for (std::size_t i = 0; i < acc.size(); ++i)
      acc[i] = acc[i] + parts[r][i];
  return acc;
}

floats host_gather(const std::vector<floats>& parts) {
  floats out;
  for (const auto& p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Block q of w of v.
floats block(const floats& v, std::size_t q, std::size_t w) {
  const std::size_t n = v.size() / w;
  return floats(v.begin() + static_cast<std::ptrdiff_t>(q * n),
                v.begin() + static_cast<std::ptrdiff_t>((q + 1) * n));
}

floats doubled(floats v) {
  for (auto& x : v)
    x = x + x;
  return v;
}

struct group {
  std::vector<floats> host;
  std::vector<tensor> parts;
};

group make_group(ag::runtime& rt, const std::vector<device>& places, const shape_t& shape,
                 uint32_t seed) {
  group g;
  for (std::size_t i = 0; i < places.size(); ++i) {
    g.host.push_back(values(static_cast<std::size_t>(numel(shape)), seed * 131 + uint32_t(i)));
    g.parts.push_back(rt.from_vector(shape, g.host.back(), places[i]));
  }
  return g;
}

std::string describe(const std::vector<device>& places, const shape_t& shape) {
  std::string s = ag::to_string(places) + " shape [";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

// Results of one collective: their devices, shapes and values, each against the reference.
void check_results(const char* what, const std::vector<tensor>& r,
                   const std::vector<device>& places, const shape_t& shape,
                   const std::vector<floats>& ref) {
  INFO(what);
  REQUIRE(r.size() == places.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    INFO("result " << i);
    CHECK(r[i].device() == places[i]);
    CHECK(r[i].shape() == shape);
    CHECK(r[i].dtype() == ag::dtype::float32);
    CHECK(same_bits(r[i].to_vector(), ref[i]));
  }
}

enum kinds : unsigned { reduce = 1, gather = 2, scatter = 4, spread = 8, every = 15 };

// The collectives of `which` over parts of `shape` on `places` (reduce_scatter only where dim 0
// divides), each result used at once in a further operator. Over devices alone every collective
// is submitted before any read; where the cpu takes part, one collective at a time, its results
// dropped before the next (cpu results hold store ranges of their own).
void check_every_collective(ag::runtime& rt, const std::vector<device>& places,
                            const shape_t& shape, uint32_t seed, unsigned which = every) {
  INFO(describe(places, shape));
  const std::size_t w = places.size();
  const auto g = make_group(rt, places, shape, seed);
  const auto sum = host_sum(g.host);
  const bool together =
    std::none_of(places.begin(), places.end(), [](const device& d) { return d.is_cpu(); });
  std::vector<std::function<void()>> checks;
  auto then = [&](std::function<void()> check) {
    if (together)
      checks.push_back(std::move(check));
    else
      check();
  };

  if (which & reduce) {
    const auto r = ag::all_reduce(g.parts);
    const auto twice = r.back() + r.back(); // no sync in between
    then([&, r, twice] {
      check_results("all_reduce", r, places, shape, std::vector<floats>(w, sum));
      CHECK(same_bits(twice.to_vector(), doubled(sum)));
    });
  }
  if (which & gather) {
    const auto r = ag::all_gather(g.parts);
    const auto twice = r.front() + r.front();
    then([&, r, twice] {
      const auto gathered = host_gather(g.host);
      shape_t gshape = shape;
      gshape[0] *= static_cast<int64_t>(w);
      check_results("all_gather", r, places, gshape, std::vector<floats>(w, gathered));
      CHECK(same_bits(twice.to_vector(), doubled(gathered)));
    });
  }
  if ((which & scatter) && shape[0] % static_cast<int64_t>(w) == 0) {
    const auto r = ag::reduce_scatter(g.parts);
    const auto twice = r[w / 2] + r[w / 2];
    then([&, r, twice] {
      shape_t sshape = shape;
      sshape[0] /= static_cast<int64_t>(w);
      std::vector<floats> blocks;
      for (std::size_t q = 0; q < w; ++q)
        blocks.push_back(block(sum, q, w));
      check_results("reduce_scatter", r, places, sshape, blocks);
      CHECK(same_bits(twice.to_vector(), doubled(blocks[w / 2])));
    });
  }
  if (which & spread) {
    const std::size_t src = seed % w;
    const auto r = ag::broadcast(g.parts[src], places);
    const auto twice = r.front() + r.front();
    then([&, r, twice, src] {
      INFO("broadcast from part " << src);
      check_results("broadcast", r, places, shape, std::vector<floats>(w, g.host[src]));
      CHECK(same_bits(twice.to_vector(), doubled(g.host[src])));
    });
  }
  for (auto& check : checks)
    check();
}

// The shapes of the matrix for w parts over a store of `store` bytes: 1 element, small and odd
// sizes, exactly one chunk, one more, several chunks; reduce_scatter's segments of one element and
// of more than one chunk; parts of two dimensions.
std::vector<shape_t> shapes_for(std::size_t w, std::size_t store, bool many) {
  const int64_t c = chunk_of(store, w);
  const auto W = static_cast<int64_t>(w);
  if (!many)
    return {{1}, {7}, {c + 1}, {W * (c + 1)}, {W * 5, 3}};
  return {{1},     {2},         {3},     {7},     {1000},        {c},       {c + 1},
          {40001}, {2 * c + 3}, {W},     {W * 7}, {W * (c + 1)}, {W * 5, 3}, {11, 3}};
}

void run_matrix(bool process, int w, bool many) {
  INFO((process ? "process mode" : "thread mode") << " with " << w << " sim devices");
  const std::size_t store = std::size_t{1} << 20;
  {
    ag::runtime rt{option(w, process, store)};
    uint32_t seed = 1;
    for (const auto& shape : shapes_for(static_cast<std::size_t>(w), store, many))
      check_every_collective(rt, sims(w), shape, seed++);
    rt.sync();
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

// What an ag::error says, or "" when f does not throw one.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ag::error& e) {
    return e.what();
  }
  return {};
}

ag::replay_report replay_trace(const ag::trace::file& t, bool process) {
  return ag::test::replay_file(t, process);
}

} // namespace

// -- results against the host, bit for bit ---------------------------------------------------

TEST_CASE("every collective matches the host sum bit for bit in thread mode over 2 3 4 5 and 8 "
          "sim devices",
          "[collectives]") {
  for (int w : {2, 3, 4, 5, 8})
    run_matrix(false, w, true);
}

TEST_CASE("every collective matches the host sum bit for bit in process mode over 2 3 and 5 "
          "sim devices",
          "[collectives]") {
  for (int w : {2, 3, 5})
    run_matrix(true, w, w != 5);
}

TEST_CASE("every collective over 8 children in process mode matches the host sum bit for bit",
          "[collectives]") {
  const std::size_t store = std::size_t{1} << 20;
  const int64_t c = chunk_of(store, 8);
  {
    ag::runtime rt{option(8, true, store)};
    CHECK(runner_children().size() == 8);
    check_every_collective(rt, sims(8), {1}, 4);
    check_every_collective(rt, sims(8), {3}, 5);
    check_every_collective(rt, sims(8), {8 * (c + 1)}, 6);
    check_every_collective(rt, sims(8), {8 * 5, 3}, 7);
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("collectives with a part on the cpu give every place its result in order in both "
          "modes",
          "[collectives]") {
  // A store of 8 MiB: cpu results take one whole range each (a gather of 4 x (chunk + 1)).
  const std::size_t store = std::size_t{8} << 20;
  const std::vector<device> places{device::sim(2), device::cpu(), device::sim(0), device::sim(1)};
  const int64_t c = chunk_of(store, places.size());
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      ag::runtime rt{option(3, process, store)};
      uint32_t seed = 40;
      for (const shape_t& shape : std::vector<shape_t>{{1}, {2}, {1001}, {c}, {c + 1}, {20, 3},
                                                       {13, 3}})
        check_every_collective(rt, places, shape, seed++);
      // Several chunks; a gather of these onto the cpu would take 40% of the store.
      check_every_collective(rt, places, {2 * c + 3}, seed++, reduce | spread);
      // reduce_scatter segments of more than one chunk.
      check_every_collective(rt, places, {4 * (c + 1)}, seed++, scatter);
      // Only the cpu and one device.
      check_every_collective(rt, {device::cpu(), device::sim(1)}, {c + 7}, seed++);
      check_every_collective(rt, {device::sim(1), device::cpu()}, {6, 3}, seed++);
      rt.sync();
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

TEST_CASE("a collective of a single part is a copy of it on its device", "[collectives]") {
  ag::runtime rt{option(2, false)};
  for (const device& d : {device::sim(1), device::cpu()})
    check_every_collective(rt, {d}, {chunk_of(std::size_t{1} << 20, 1) + 3}, 9);
}

TEST_CASE("collectives of parts without elements give empty results on every device",
          "[collectives]") {
  ag::runtime rt{option(2, false)};
  const std::vector<device> places{device::sim(0), device::cpu(), device::sim(1)};
  for (const shape_t& shape : std::vector<shape_t>{{0}, {0, 3}}) {
    INFO(describe(places, shape));
    std::vector<tensor> parts;
    for (const auto& d : places)
      parts.push_back(rt.full(shape, 1.0f, d));
    shape_t gshape = shape;
    gshape[0] = 0;
    for (const auto& r : {ag::all_reduce(parts), ag::all_gather(parts), ag::reduce_scatter(parts),
                          ag::broadcast(parts[0], places)}) {
      REQUIRE(r.size() == places.size());
      for (std::size_t i = 0; i < r.size(); ++i) {
        CHECK(r[i].device() == places[i]);
        CHECK(r[i].shape() == gshape);
        CHECK(r[i].numel() == 0);
        CHECK((r[i] + r[i]).to_vector().empty());
        CHECK(r[i].to_vector().empty());
      }
    }
    rt.sync();
  }
}

// -- broadcast ----------------------------------------------------------------------------------

TEST_CASE("broadcast copies a tensor from a device or the cpu to every other place and gives "
          "the source itself where it is named",
          "[collectives]") {
  const std::size_t store = std::size_t{4} << 20;
  const int64_t big = chunk_of(store, 1) + 5; // two chunks
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      ag::runtime rt{option(3, process, store)};
      for (const int64_t n : {int64_t{1}, int64_t{7}, big}) {
        INFO(n << " elements");
        const auto v = values(static_cast<std::size_t>(n), uint32_t(n));
        const auto t = rt.from_vector({n}, v, device::sim(1));
        {
          // From a device to the cpu and the other devices.
          const std::vector<device> out{device::cpu(), device::sim(0), device::sim(2)};
          const auto r = ag::broadcast(t, out);
          REQUIRE(r.size() == 3);
          for (std::size_t i = 0; i < r.size(); ++i) {
            CHECK(r[i].device() == out[i]);
            CHECK(r[i].shape() == shape_t{n});
            CHECK(same_bits(r[i].to_vector(), v));
          }
        }
        {
          // From the cpu to every device.
          const auto h = rt.from_vector({n}, v, device::cpu());
          const auto d = ag::broadcast(h, sims(3));
          REQUIRE(d.size() == 3);
          for (std::size_t i = 0; i < d.size(); ++i) {
            CHECK(d[i].device() == device::sim(int(i)));
            CHECK(same_bits((d[i] + d[i]).to_vector(), doubled(v)));
            CHECK(same_bits(d[i].to_vector(), v));
          }
        }
        {
          // A list naming the source: that entry is the source, the others copies.
          const auto s = ag::broadcast(t, {device::sim(0), device::sim(1), device::cpu()});
          REQUIRE(s.size() == 3);
          CHECK(s[1].device() == device::sim(1));
          CHECK(s[1].shape() == t.shape());
          CHECK(same_bits(s[1].to_vector(), t.to_vector()));
          CHECK(same_bits(s[1].to_vector(), v));
          CHECK(same_bits((s[1] + t).to_vector(), doubled(v)));
          CHECK(same_bits(s[0].to_vector(), v));
          CHECK(same_bits(s[2].to_vector(), v));
        }
      }

      // Only the source's own device: nothing is submitted, the result is the source.
      const auto t = rt.from_vector({5}, values(5, 3), device::sim(2));
      const auto c = rt.from_vector({5}, values(5, 4), device::cpu());
      rt.sync();
      const auto before = rt.stats().operators;
      const auto self = ag::broadcast(t, {device::sim(2)});
      const auto cself = ag::broadcast(c, {device::cpu()});
      rt.sync();
      CHECK(rt.stats().operators == before);
      REQUIRE(self.size() == 1);
      REQUIRE(cself.size() == 1);
      CHECK(self[0].device() == device::sim(2));
      CHECK(cself[0].device() == device::cpu());
      CHECK(same_bits(self[0].to_vector(), values(5, 3)));
      CHECK(same_bits(cself[0].to_vector(), values(5, 4)));
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

// -- errors at the call ---------------------------------------------------------------------

TEST_CASE("a malformed group throws at the call naming what was wrong",
          "[collectives]") {
  ag::runtime rt{option(3, false)};
  const auto a = rt.full({4}, 1.0f, device::sim(0));
  const auto b = rt.full({4}, 2.0f, device::sim(1));
  const auto b5 = rt.full({5}, 2.0f, device::sim(1));
  const auto c = rt.full({4}, 3.0f, device::sim(0));
  const auto h = rt.full({4}, 4.0f, device::cpu());
  const auto scalar0 = a.sum();
  const auto scalar1 = b.sum();
  const auto odd0 = rt.full({7}, 1.0f, device::sim(0));
  const auto odd1 = rt.full({7}, 1.0f, device::sim(1));
  const auto m0 = rt.full({7, 3}, 1.0f, device::sim(0));
  const auto m1 = rt.full({7, 3}, 1.0f, device::sim(1));
  const auto m2 = rt.full({7, 3}, 1.0f, device::sim(2));
  const auto t3 = rt.full({3, 2}, 1.0f, device::sim(0));
  const auto t2 = rt.full({2, 3}, 1.0f, device::sim(1));
  rt.sync();

  SECTION("no parts") {
    CHECK_THROWS_WITH(ag::all_reduce({}),
                      Contains("all_reduce: no parts (one tensor per device is needed)"));
    CHECK_THROWS_WITH(ag::all_gather({}), Contains("all_gather: no parts"));
    CHECK_THROWS_WITH(ag::reduce_scatter({}), Contains("reduce_scatter: no parts"));
  }
  SECTION("shapes that differ") {
    CHECK_THROWS_WITH(ag::all_reduce({a, b5}),
                      Contains("all_reduce: shape mismatch: part 0 (float32[4] on sim:0), "
                               "part 1 (float32[5] on sim:1)"));
    CHECK_THROWS_WITH(ag::all_gather({a, h, b5}),
                      Contains("all_gather: shape mismatch: part 0 (float32[4] on sim:0), "
                               "part 2 (float32[5] on sim:1)"));
    // The same element count is not the same shape.
    CHECK_THROWS_WITH(ag::reduce_scatter({t3, t2}),
                      Contains("reduce_scatter: shape mismatch: part 0 (float32[3,2] on sim:0), "
                               "part 1 (float32[2,3] on sim:1)"));
  }
  SECTION("two parts on one device") {
    CHECK_THROWS_WITH(ag::all_reduce({a, b, c}),
                      Contains("all_reduce: device mismatch: part 0 (float32[4] on sim:0) and "
                               "part 2 (float32[4] on sim:0) are on the same device; one part "
                               "per device"));
    CHECK_THROWS_WITH(ag::all_gather({h, a, h}),
                      Contains("all_gather: device mismatch: part 0 (float32[4] on cpu) and "
                               "part 2 (float32[4] on cpu)"));
    CHECK_THROWS_WITH(ag::reduce_scatter({a, a}), Contains("are on the same device"));
  }
  SECTION("parts without a dimension to cut or join") {
    CHECK_THROWS_WITH(ag::all_gather({scalar0, scalar1}),
                      Contains("all_gather: parts must have at least one dimension, got "
                               "float32[] on sim:0"));
    CHECK_THROWS_WITH(ag::reduce_scatter({scalar0, scalar1}),
                      Contains("reduce_scatter: parts must have at least one dimension"));
    // all_reduce takes them: a scalar sum.
    const auto r = ag::all_reduce({scalar0, scalar1});
    CHECK(r[0].shape().empty());
    CHECK(r[1].to_vector() == floats{4.0f + 8.0f});
  }
  SECTION("dim 0 not divisible by the parts") {
    CHECK_THROWS_WITH(ag::reduce_scatter({odd0, odd1}),
                      Contains("reduce_scatter: dim 0 of float32[7] on sim:0 (7) is not "
                               "divisible by the 2 parts"));
    CHECK_THROWS_WITH(ag::reduce_scatter({m0, m1, m2}),
                      Contains("reduce_scatter: dim 0 of float32[7,3] on sim:0 (7) is not "
                               "divisible by the 3 parts"));
    // all_gather takes any dim 0.
    CHECK(ag::all_gather({m0, m1, m2})[2].shape() == shape_t{21, 3});
  }
  SECTION("broadcast to no device or an unknown one or one twice") {
    CHECK_THROWS_WITH(ag::broadcast(a, {}),
                      Contains("broadcast: no devices to broadcast float32[4] on sim:0 to"));
    CHECK_THROWS_WITH(ag::broadcast(a, {device::sim(1), device::sim(5)}),
                      Contains("broadcast: sim:5 is not a device of this runtime (broadcasting "
                               "float32[4] on sim:0)"));
    CHECK_THROWS_WITH(ag::broadcast(h, {device::cuda(0)}),
                      Contains("broadcast: cuda:0 is not a device of this runtime"));
    CHECK_THROWS_WITH(ag::broadcast(a, {device::sim(1), device::sim(1)}),
                      Contains("broadcast: sim:1 is named twice (to[0] and to[1])"));
    CHECK_THROWS_WITH(ag::broadcast(a, {device::cpu(), device::sim(2), device::sim(0),
                                        device::cpu()}),
                      Contains("broadcast: cpu is named twice (to[0] and to[3])"));
    // The source's own device named twice is refused too.
    CHECK_THROWS_WITH(ag::broadcast(a, {device::sim(0), device::sim(0)}),
                      Contains("broadcast: sim:0 is named twice (to[0] and to[1])"));
  }
  SECTION("an undefined tensor") {
    CHECK_THROWS_WITH(ag::all_reduce({a, tensor{}}),
                      Contains("all_reduce: undefined tensor (default-constructed handle)"));
    CHECK_THROWS_WITH(ag::all_gather({tensor{}, a}),
                      Contains("all_gather: undefined tensor (default-constructed handle)"));
    CHECK_THROWS_WITH(ag::reduce_scatter({tensor{}}),
                      Contains("reduce_scatter: undefined tensor (default-constructed handle)"));
    CHECK_THROWS_WITH(ag::broadcast(tensor{}, {device::sim(0)}),
                      Contains("broadcast: undefined tensor (default-constructed handle)"));
  }
  SECTION("parts of two runtimes or of a runtime that is gone") {
    tensor gone;
    {
      ag::runtime other{option(3, false)};
      const auto x = other.full({4}, 1.0f, device::sim(1));
      CHECK_THROWS_WITH(ag::all_reduce({a, x}),
                        Contains("all_reduce: runtime mismatch: part 0 (float32[4] on sim:0), "
                                 "part 1 (float32[4] on sim:1)"));
      gone = other.full({4}, 1.0f, device::sim(2));
      other.sync();
    }
    CHECK_THROWS_WITH(ag::all_reduce({gone}), Contains("all_reduce:") && Contains("outlived its runtime"));
    CHECK_THROWS_WITH(ag::broadcast(gone, {device::sim(0)}),
                      Contains("broadcast:") && Contains("outlived its runtime"));
  }

  // The runtime goes on after the calls that threw.
  CHECK(error_of([&] { rt.sync(); }).empty());
  CHECK(rt.stats().in_flight_ops == 0);
  CHECK(ag::all_reduce({a, b, h})[2].to_vector() == floats(4, 7.0f));
}

TEST_CASE("a call that throws submits nothing", "[collectives]") {
  ag::runtime rt{option(2, false)};
  const auto a = rt.full({4}, 1.0f, device::sim(0));
  const auto b5 = rt.full({5}, 1.0f, device::sim(1));
  const auto odd0 = rt.full({7}, 1.0f, device::sim(0));
  const auto odd1 = rt.full({7}, 1.0f, device::sim(1));
  const auto s0 = a.sum();
  const auto s1 = b5.sum();
  rt.sync();
  const auto before = rt.stats();
  CHECK_FALSE(error_of([&] { ag::all_reduce({a, b5}); }).empty());
  CHECK_FALSE(error_of([&] { ag::all_reduce({a, a}); }).empty());
  CHECK_FALSE(error_of([&] { ag::all_gather({s0, s1}); }).empty());
  CHECK_FALSE(error_of([&] { ag::reduce_scatter({odd0, odd1}); }).empty());
  CHECK_FALSE(error_of([&] { ag::broadcast(a, {}); }).empty());
  CHECK_FALSE(error_of([&] { ag::broadcast(a, {device::sim(7)}); }).empty());
  CHECK_FALSE(error_of([&] { ag::broadcast(a, {device::sim(1), device::sim(1)}); }).empty());
  CHECK_FALSE(error_of([&] { ag::all_reduce({a, tensor{}}); }).empty());
  rt.sync();
  const auto after = rt.stats();
  CHECK(after.operators == before.operators);
  CHECK(after.batches == before.batches);
  CHECK(after.store_live_bytes == before.store_live_bytes);
  CHECK(after.in_flight_ops == 0);
  CHECK(ag::all_reduce({odd0, odd1})[0].to_vector() == floats(7, 2.0f));
}

// -- ordering without syncs -------------------------------------------------------------------

TEST_CASE("a collective orders after the operators that made its parts and before those that "
          "use its results without a sync",
          "[collectives]") {
  const std::size_t store = std::size_t{4} << 20;
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      ag::runtime rt{option(3, process, store)};
      const std::vector<device> places{device::sim(0), device::sim(1), device::sim(2),
                                       device::cpu()};
      const int64_t n = chunk_of(store, places.size()) + 1; // two chunks
      std::vector<floats> host, twice;
      std::vector<tensor> xs, parts;
      for (std::size_t i = 0; i < places.size(); ++i) {
        host.push_back(values(static_cast<std::size_t>(n), 70 + uint32_t(i)));
        xs.push_back(rt.from_vector({n}, host.back(), places[i]));
        parts.push_back(xs.back() * rt.full({n}, 2.0f, places[i])); // x_i * 2 on its device
        twice.push_back(doubled(host.back()));
      }
      const auto sum = host_sum(twice);
      const auto r = ag::all_reduce(parts);
      std::vector<tensor> used;
      for (std::size_t i = 0; i < places.size(); ++i)
        used.push_back(r[i] + parts[i]); // on each device, right after
      // A result moved on at once: to another device, and into the next collective.
      const auto moved = r[0].to(device::sim(1)) + parts[1];
      const auto next = ag::all_reduce({moved, r[2]});
      for (std::size_t i = 0; i < places.size(); ++i) {
        INFO("place " << i);
        floats ref = sum;
        for (std::size_t k = 0; k < ref.size(); ++k)
          ref[k] = ref[k] + twice[i][k];
        CHECK(same_bits(used[i].to_vector(), ref));
      }
      floats moved_ref = sum;
      for (std::size_t k = 0; k < moved_ref.size(); ++k)
        moved_ref[k] = moved_ref[k] + twice[1][k];
      const auto next_ref = host_sum({moved_ref, sum});
      CHECK(next[0].device() == device::sim(1));
      CHECK(next[1].device() == device::sim(2));
      CHECK(same_bits(moved.to_vector(), moved_ref));
      CHECK(same_bits(next[0].to_vector(), next_ref));
      CHECK(same_bits(next[1].to_vector(), next_ref));
      rt.sync();
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

TEST_CASE("reduce_scatter then all_gather equals all_reduce bit for bit without a sync",
          "[collectives]") {
  const std::size_t store = std::size_t{4} << 20;
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      ag::runtime rt{option(3, process, store)};
      for (const auto& places : {sims(3), std::vector<device>{device::sim(1), device::cpu(),
                                                              device::sim(0), device::sim(2)}}) {
        const auto w = static_cast<int64_t>(places.size());
        const int64_t c = chunk_of(store, places.size());
        const bool on_cpu = w == 4;
        // Over devices: blocks of more than a chunk. With the cpu, whose results each take a
        // range of their own: blocks of a third of one, over more than a chunk in all.
        const shape_t shape = on_cpu ? shape_t{w * (c / 3 + 1)} : shape_t{w * (c + 3), 2};
        INFO(describe(places, shape));
        // The parts are operator results too, and nothing waits until the reads.
        std::vector<floats> host;
        std::vector<tensor> parts;
        for (std::size_t i = 0; i < places.size(); ++i) {
          host.push_back(values(static_cast<std::size_t>(numel(shape)), 90 + uint32_t(i)));
          const auto x = rt.from_vector(shape, host.back(), places[i]);
          parts.push_back(x + x);
          host.back() = doubled(host.back());
        }
        const auto sum = host_sum(host);
        const auto reduced = ag::all_reduce(parts);
        {
          const auto chained = ag::all_gather(ag::reduce_scatter(parts));
          REQUIRE(chained.size() == places.size());
          for (std::size_t i = 0; i < places.size(); ++i) {
            INFO("result " << i);
            CHECK(chained[i].device() == places[i]);
            CHECK(chained[i].shape() == shape);
            const auto got = chained[i].to_vector();
            CHECK(same_bits(got, reduced[i].to_vector()));
            CHECK(same_bits(got, sum));
          }
        }
        // A longer chain: all_reduce of all_reduce, then broadcast of one result.
        const auto again = ag::all_reduce(reduced);
        const auto sent = ag::broadcast(again[1], places);
        const auto sum2 = host_sum(std::vector<floats>(places.size(), sum));
        REQUIRE(sent.size() == places.size());
        for (std::size_t i = 0; i < places.size(); ++i) {
          CHECK(sent[i].device() == places[i]);
          CHECK(same_bits(sent[i].to_vector(), sum2));
        }
      }
      rt.sync();
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

// -- releases ----------------------------------------------------------------------------------

TEST_CASE("inputs dropped right after the call still give the right results and every byte of "
          "the store comes back",
          "[collectives]") {
  const std::size_t store = std::size_t{4} << 20;
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      ag::runtime rt{option(3, process, store)};
      rt.sync();
      const auto before = rt.stats();
      {
        // Over the devices, more than a chunk per block: the inputs are gone while chunks that
        // still read them are placed.
        const auto places = sims(3);
        const int64_t n = 3 * (chunk_of(store, places.size()) + 1);
        std::vector<floats> host;
        for (std::size_t i = 0; i < places.size(); ++i)
          host.push_back(values(static_cast<std::size_t>(n), 110 + uint32_t(i)));
        // Each call's parts are a temporary: their handles are gone when it returns.
        auto fresh = [&] {
          std::vector<tensor> parts;
          for (std::size_t i = 0; i < places.size(); ++i)
            parts.push_back(rt.from_vector({n}, host[i], places[i]));
          return parts;
        };
        const auto reduced = ag::all_reduce(fresh());
        const auto gathered = ag::all_gather(fresh());
        const auto scattered = ag::reduce_scatter(fresh());
        const std::vector<device> out{device::cpu(), device::sim(0), device::sim(1),
                                      device::sim(2)};
        const auto copies = ag::broadcast(fresh()[2], out);
        // Results dropped unread, while in flight.
        (void)ag::all_reduce(fresh());
        (void)ag::all_gather(fresh());
        // A group with the cpu, its parts and results in the store.
        std::vector<floats> small;
        for (std::size_t i = 0; i < out.size(); ++i)
          small.push_back(values(1001, 120 + uint32_t(i)));
        auto fresh_small = [&] {
          std::vector<tensor> parts;
          for (std::size_t i = 0; i < out.size(); ++i)
            parts.push_back(rt.from_vector({1001}, small[i], out[i]));
          return parts;
        };
        const auto small_reduced = ag::all_reduce(fresh_small());
        const auto small_gathered = ag::all_gather(fresh_small());
        (void)ag::all_gather(fresh_small());

        const auto sum = host_sum(host);
        const auto all = host_gather(host);
        for (std::size_t i = 0; i < places.size(); ++i) {
          INFO("result " << i);
          CHECK(same_bits(reduced[i].to_vector(), sum));
          CHECK(same_bits(gathered[i].to_vector(), all));
          CHECK(same_bits(scattered[i].to_vector(), block(sum, i, places.size())));
        }
        for (const auto& t : copies)
          CHECK(same_bits(t.to_vector(), host[2]));
        for (std::size_t i = 0; i < out.size(); ++i) {
          CHECK(same_bits(small_reduced[i].to_vector(), host_sum(small)));
          CHECK(same_bits(small_gathered[i].to_vector(), host_gather(small)));
        }
        CHECK(rt.stats().store_live_bytes > before.store_live_bytes); // cpu results live
      }
      rt.sync();
      const auto after = rt.stats();
      CHECK(after.store_live_bytes == before.store_live_bytes);
      CHECK(after.device_live_bytes == before.device_live_bytes);
      CHECK(after.in_flight_ops == 0);
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

// -- a small store, several threads, an early end ---------------------------------------------

TEST_CASE("collectives over a store much smaller than their parts wait for room chunk by chunk",
          "[collectives]") {
  // 64 KiB: chunks of 819 elements (4 parts), of which only a few fit at once.
  const std::size_t store = std::size_t{64} << 10;
  const std::vector<device> places{device::sim(0), device::sim(1), device::sim(2), device::cpu()};
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      ag::runtime rt{option(3, process, store)};
      // A cpu part and cpu results need ranges of their own: small enough for this store.
      check_every_collective(rt, places, {4 * 501}, 500, reduce | scatter | spread);
      check_every_collective(rt, places, {1001}, 501, gather);
      // Over devices alone, parts 30 times the store (reads go through it in pieces).
      check_every_collective(rt, sims(3), {3 * 40001}, 502);
      rt.sync();
      CHECK(rt.stats().store_live_bytes == 0);
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

TEST_CASE("collectives submitted from several threads at once each give the host sum",
          "[collectives]") {
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      ag::runtime rt{option(3, process, std::size_t{4} << 20)};
      const std::vector<device> places{device::sim(0), device::cpu(), device::sim(1),
                                       device::sim(2)};
      constexpr int threads = 4;
      constexpr int rounds = 5;
      std::vector<int> wrong(threads, 0), thrown(threads, 0);
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          for (int k = 0; k < rounds; ++k) {
            try {
              const auto seed = uint32_t(1000 + t * rounds + k);
              const int64_t n = 4 * (3001 + 997 * t + 13 * k);
              const auto g = make_group(rt, places, {n}, seed);
              const auto sum = host_sum(g.host);
              const auto chained = ag::all_gather(ag::reduce_scatter(g.parts));
              const auto reduced = ag::all_reduce(g.parts);
              for (std::size_t i = 0; i < places.size(); ++i) {
                wrong[t] += same_bits(reduced[i].to_vector(), sum) ? 0 : 1;
                wrong[t] += same_bits(chained[i].to_vector(), sum) ? 0 : 1;
              }
            } catch (const ag::error&) {
              ++thrown[t];
            }
          }
        });
      for (auto& th : pool)
        th.join();
      for (int t = 0; t < threads; ++t) {
        INFO("thread " << t);
        CHECK(wrong[t] == 0);
        CHECK(thrown[t] == 0);
      }
      rt.sync();
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

TEST_CASE("a runtime destroyed with collectives in flight ends in order and leaves results that "
          "say it is gone",
          "[collectives]") {
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    std::vector<tensor> results;
    {
      ag::runtime rt{option(3, process, std::size_t{1} << 20)};
      std::vector<tensor> parts;
      for (int i = 0; i < 3; ++i)
        parts.push_back(rt.full({200003}, float(i), device::sim(i)));
      results = ag::all_reduce(parts);
      for (const auto& t : ag::broadcast(parts[0], {device::cpu(), device::sim(2)}))
        results.push_back(t);
    } // the destructor waits for the work submitted, then stops every runner
    for (const auto& t : results)
      CHECK_THROWS_WITH(t.to_vector(), Contains("outlived its runtime"));
    CHECK_THROWS_WITH(ag::all_reduce({results[0], results[1], results[2]}),
                      Contains("outlived its runtime"));
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

// -- faults ------------------------------------------------------------------------------------

TEST_CASE("a child killed while a large collective is in flight fails every result naming its "
          "device and no participant waits for it",
          "[collectives][faults]") {
  {
    // A hang would pass the 2 s deadline and fail the checks below (they want the signal).
    ag::runtime rt{option(3, true, std::size_t{4} << 20, 2000ms)};
    const int64_t n = (int64_t{1} << 22) / int64_t(tsan_shrink); // 64 chunks of 65536 elements
    std::vector<tensor> parts;
    for (int i = 0; i < 3; ++i)
      parts.push_back(rt.full({n}, float(i + 1), device::sim(i)));
    const auto small = rt.full({8}, 5.0f, device::sim(0));
    const auto host = rt.full({8}, 6.0f, device::cpu());
    rt.sync();
    const pid_t child = runner_of_lane(2); // sim:1
    REQUIRE(child > 0);
    const auto r = ag::all_reduce(parts);
    const auto g = ag::broadcast(parts[1], {device::sim(0), device::cpu(), device::sim(2)});
    ::kill(child, SIGKILL);
    for (const auto& results : {r, g})
      for (std::size_t i = 0; i < results.size(); ++i) {
        INFO("result " << i << " on " << results[i].device().str());
        CHECK_THROWS_WITH(results[i].to_vector(), Contains("sim:1") && Contains("signal 9"));
      }
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:1"));
    // Healthy devices go on: operators, and a collective among them.
    CHECK((small + small).to_vector() == floats(8, 10.0f));
    const auto healthy = ag::all_reduce({small, host, rt.full({8}, 7.0f, device::sim(2))});
    for (const auto& t : healthy)
      CHECK(t.to_vector() == floats(8, 18.0f));
    CHECK_THROWS_WITH(rt.full({1}, 1.0f, device::sim(1)).to_vector(), Contains("sim:1"));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a child killed at any moment of a collective leaves each result either whole and "
          "right or an error naming the dead device",
          "[collectives][faults]") {
  const int64_t n = (int64_t{1} << 21) / int64_t(tsan_shrink);
  for (int round = 0; round < 6; ++round) {
    const int victim = round % 3; // sim:victim, lane victim + 1
    const auto delay = std::chrono::milliseconds{(round / 3) * 7};
    INFO("round " << round << ": sim:" << victim << " killed after " << delay.count() << " ms");
    {
      ag::runtime rt{option(3, true, std::size_t{4} << 20, 2000ms)};
      std::vector<tensor> parts;
      for (int i = 0; i < 3; ++i)
        parts.push_back(rt.full({n}, float(i + 1), device::sim(i)));
      rt.sync();
      const pid_t child = runner_of_lane(victim + 1);
      REQUIRE(child > 0);
      const auto reduced = ag::all_reduce(parts);
      const auto copies = ag::broadcast(parts[2], {device::cpu(), device::sim(0), device::sim(1)});
      const auto gathered = ag::all_gather({parts[0], parts[1]});
      std::this_thread::sleep_for(delay);
      ::kill(child, SIGKILL);
      const std::string dead = "sim:" + std::to_string(victim);
      auto either = [&](const tensor& t, float value, std::size_t elems) {
        INFO("a result on " << t.device().str());
        try {
          const auto v = t.to_vector();
          CHECK(t.device().str() != dead); // what lives on the dead device cannot be read
          CHECK(v == floats(elems, value));
        } catch (const ag::error& e) {
          CHECK_THAT(e.what(), Contains(dead) && Contains("signal 9"));
        }
      };
      for (const auto& t : reduced)
        either(t, 6.0f, std::size_t(n));
      for (const auto& t : copies)
        either(t, 3.0f, std::size_t(n));
      floats cat(std::size_t(n), 1.0f);
      cat.insert(cat.end(), std::size_t(n), 2.0f);
      for (const auto& t : gathered) {
        INFO("a result on " << t.device().str());
        try {
          const auto v = t.to_vector();
          CHECK(t.device().str() != dead);
          CHECK(v == cat);
        } catch (const ag::error& e) {
          CHECK_THAT(e.what(), Contains(dead) && Contains("signal 9"));
        }
      }
      CHECK_THROWS_WITH(rt.sync(), Contains(dead));
      // The others go on.
      const int a = (victim + 1) % 3, b = (victim + 2) % 3;
      const auto healthy = ag::all_reduce({rt.full({5}, 1.0f, device::sim(a)),
                                           rt.full({5}, 2.0f, device::sim(b)),
                                           rt.full({5}, 4.0f, device::cpu())});
      for (const auto& t : healthy)
        CHECK(t.to_vector() == floats(5, 7.0f));
    }
    REQUIRE(runner_children().empty());
    REQUIRE(my_shm().empty());
  }
}

// Every result of each collective, and what is computed from it, throws naming `dead`.
void check_all_fail(const std::vector<std::vector<tensor>>& collectives, const std::string& dead) {
  for (std::size_t c = 0; c < collectives.size(); ++c)
    for (std::size_t i = 0; i < collectives[c].size(); ++i) {
      const auto& t = collectives[c][i];
      INFO("collective " << c << ", result " << i << " on " << t.device().str());
      CHECK_THROWS_WITH(t.to_vector(), Contains(dead));
      CHECK_THROWS_WITH((t + t).to_vector(), Contains(dead));
    }
}

TEST_CASE("a collective whose input was computed on a child killed before the call fails every "
          "result naming that device",
          "[collectives][faults]") {
  {
    ag::runtime rt{option(3, true, std::size_t{1} << 20, 2000ms)};
    const auto x0 = rt.full({1000}, 1.0f, device::sim(0));
    const auto x1 = rt.full({1000}, 2.0f, device::sim(1));
    const auto x2 = rt.full({1000}, 3.0f, device::sim(2));
    const auto xc = rt.full({1000}, 4.0f, device::cpu());
    rt.sync();
    const pid_t child = runner_of_lane(2); // sim:1
    REQUIRE(child > 0);
    ::kill(child, SIGKILL);
    REQUIRE(within(5000ms, [&] { return exited(child); }));
    // Until the runtime has seen the death (a read on sim:1 fails naming the signal).
    REQUIRE(within(5000ms, [&] {
      return Contains("signal 9").match(error_of([&] { rt.full({1}, 0.0f, device::sim(1)).to_vector(); }));
    }));
    const auto y1 = x1 * x1; // on the dead device
    check_all_fail({ag::all_reduce({x0, y1, x2, xc}), ag::all_gather({xc, x0, y1}),
                    ag::reduce_scatter({y1, x2}), ag::broadcast(y1, {device::sim(0), device::cpu()})},
                   "sim:1");
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:1"));
    const auto ok = ag::all_gather({x2, xc, x0});
    floats ref(1000, 3.0f);
    ref.insert(ref.end(), 1000, 4.0f);
    ref.insert(ref.end(), 1000, 1.0f);
    for (const auto& t : ok)
      CHECK(t.to_vector() == ref);
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a collective placed before its input's child is killed fails every result naming "
          "that device",
          "[collectives][faults]") {
  {
    ag::runtime rt{option(3, true, std::size_t{1} << 20, 2000ms)};
    const auto x0 = rt.full({1000}, 1.0f, device::sim(0));
    const auto x1 = rt.full({1000}, 2.0f, device::sim(1));
    const auto x2 = rt.full({1000}, 3.0f, device::sim(2));
    const auto xc = rt.full({1000}, 4.0f, device::cpu());
    rt.sync();
    const pid_t child = runner_of_lane(2); // sim:1
    REQUIRE(child > 0);
    // Stopped: its lane looks alive, so each collective below is placed whole (one chunk), and
    // its staging copy of y1 waits on sim:1.
    REQUIRE(stop_process(child));
    const auto y1 = x1 * x1;
    std::vector<std::vector<tensor>> collectives{
      ag::all_reduce({x0, y1, xc}), ag::all_gather({xc, y1, x0}), ag::reduce_scatter({y1, x0}),
      ag::broadcast(y1, {device::sim(0), device::cpu()})};
    // sim:2 takes no part: once it answers, the executor has placed every collective above.
    CHECK((x2 + x2).to_vector() == floats(1000, 6.0f));
    ::kill(child, SIGKILL);
    check_all_fail(collectives, "sim:1");
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:1"));
    const auto ok = ag::all_reduce({x2, xc, x0});
    for (const auto& t : ok)
      CHECK(t.to_vector() == floats(1000, 8.0f));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

// -- a cpu result without store room -----------------------------------------------------------

TEST_CASE("a collective whose cpu result finds no store room fails with store full and leaves "
          "every other tensor intact",
          "[collectives]") {
  // 1 MiB store, 4 parts: the all_gather's cpu result (4 x 52428 floats, 819 KiB) cannot have a
  // range while the cpu part and the all_reduce's cpu result (205 KiB each) are held, and no
  // acknowledgement can free one: it fails at once with store full.
  const std::size_t store = std::size_t{1} << 20;
  const std::vector<device> places{device::sim(2), device::cpu(), device::sim(0), device::sim(1)};
  const int64_t n = 4 * chunk_of(store, places.size());
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      ag::runtime rt{option(3, process, store)};
      const auto g = make_group(rt, places, {n}, 300);
      const auto sum = host_sum(g.host);
      const auto reduced = ag::all_reduce(g.parts);
      const auto gathered = ag::all_gather(g.parts);
      for (std::size_t i = 0; i < gathered.size(); ++i) {
        INFO("all_gather result " << i);
        CHECK_THROWS_WITH(gathered[i].to_vector(), Contains("store full") && Contains("all_gather"));
      }
      // What the store held before is as it was.
      CHECK(same_bits(g.parts[1].to_vector(), g.host[1]));
      for (std::size_t i = 0; i < reduced.size(); ++i) {
        INFO("all_reduce result " << i << " on " << reduced[i].device().str());
        CHECK(same_bits(reduced[i].to_vector(), sum));
      }
      CHECK_THROWS_WITH(rt.sync(), Contains("store full"));
      // Later collectives still work.
      const auto again = ag::all_reduce(g.parts);
      for (const auto& t : again)
        CHECK(same_bits(t.to_vector(), sum));
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

// -- the trace and its replay --------------------------------------------------------------

TEST_CASE("a trace records each collective with its kind and group and replays to the same "
          "values in both modes",
          "[collectives]") {
  temp_dir dir{"collectives-trace"};
  for (const bool recorded_process : {false, true}) {
    INFO((recorded_process ? "recorded in process mode" : "recorded in thread mode"));
    const auto path = dir.file(recorded_process ? "process.trace" : "thread.trace");
    const int64_t n = chunk_of(std::size_t{1} << 20, 4) + 5;
    {
      auto opt = option(3, recorded_process);
      opt.trace_path = path;
      ag::runtime rt{opt};
      std::vector<tensor> parts;
      for (int i = 0; i < 3; ++i)
        parts.push_back(rt.from_vector({n}, values(std::size_t(n), 200 + uint32_t(i)),
                                       device::sim(i)));
      const auto h = rt.from_vector({n}, values(std::size_t(n), 210), device::cpu());
      const auto r = ag::all_reduce({parts[0], parts[1], parts[2], h});
      const auto b = ag::broadcast(parts[1], {device::cpu(), device::sim(1), device::sim(2)});
      const auto g = ag::all_gather({h, parts[2]});
      const auto s = ag::reduce_scatter({parts[0] + r[0], parts[1]});
      // Reads of cpu results are recorded for the replay to compare.
      (void)r[3].to_vector();
      (void)b[0].to_vector();
      (void)g[0].to_vector();
      (void)s[1].to_vector();
      rt.sync();
    }
    const auto t = ag::trace::read_file(path);
    std::vector<ag::collective_request> recorded;
    for (const auto& rec : t.records)
      if (rec.type() == ag::trace::record_type::collective)
        recorded.push_back(std::get<ag::trace::collective_rec>(rec.body).c);
    REQUIRE(recorded.size() == 4);
    const auto& ar = recorded[0];
    CHECK(ar.kind == ag::collective_kind::all_reduce);
    CHECK(ar.parts.size() == 4);
    CHECK(ar.outs.size() == 4);
    CHECK(ar.count == uint64_t(n));
    CHECK(ar.from == std::vector<device>{device::sim(0), device::sim(1), device::sim(2),
                                          device::cpu()});
    CHECK(ar.to == ar.from);
    const auto& bc = recorded[1];
    CHECK(bc.kind == ag::collective_kind::broadcast);
    CHECK(bc.parts.size() == 1);
    CHECK(bc.outs.size() == 2); // sim:1 is the source itself
    CHECK(bc.to == std::vector<device>{device::cpu(), device::sim(2)});
    const auto& ag_ = recorded[2];
    CHECK(ag_.kind == ag::collective_kind::all_gather);
    CHECK(ag_.parts.size() == 2);
    CHECK(ag_.outs.size() == 2);
    CHECK(ag_.out_count() == 2 * uint64_t(n));
    const auto& rs = recorded[3];
    CHECK(rs.kind == ag::collective_kind::reduce_scatter);
    CHECK(rs.parts.size() == 2);
    CHECK(rs.outs.size() == 2);
    CHECK(rs.from == std::vector<device>{device::sim(0), device::sim(1)});
    for (const bool replay_process : {false, true}) {
      INFO((replay_process ? "replayed in process mode" : "replayed in thread mode"));
      const auto report = replay_trace(t, replay_process);
      INFO(report.divergence);
      CHECK(report.matched);
      CHECK(report.collectives == recorded.size());
      CHECK(report.reads >= 4);
    }
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

// -- the timeline ----------------------------------------------------------------------------

TEST_CASE("the timeline notes that collectives and device moves take the store and why",
          "[collectives]") {
  namespace pt = boost::property_tree;
  temp_dir dir{"collectives-timeline"};
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    const auto path = dir.file(process ? "process.json" : "thread.json");
    {
      auto opt = option(2, process);
      opt.timeline_path = path;
      ag::runtime rt{opt};
      const auto a = rt.full({100}, 1.0f, device::sim(0));
      const auto b = rt.full({100}, 2.0f, device::sim(1));
      const auto h = rt.full({100}, 3.0f, device::cpu());
      CHECK(ag::all_reduce({a, b})[1].to_vector() == floats(100, 3.0f));
      CHECK(ag::all_gather({a, b})[0].numel() == 200);
      CHECK(ag::reduce_scatter({a, b})[0].shape() == shape_t{50});
      CHECK(ag::broadcast(h, {device::sim(0), device::sim(1)})[0].to_vector() == floats(100, 3.0f));
      CHECK(a.to(device::sim(1)).to_vector() == floats(100, 1.0f));
      rt.sync();
    }
    pt::ptree root;
    pt::read_json(path, root);
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> notes; // name -> (path, why)
    for (const auto& [_, ev] : root.get_child("traceEvents")) {
      const auto args = ev.get_child_optional("args");
      if (!args || !args->get_optional<std::string>("path"))
        continue;
      notes[ev.get<std::string>("name")].emplace_back(args->get<std::string>("path"),
                                                      args->get<std::string>("why", ""));
    }
    // Each transfer went through the store, and the note says why not directly, naming the
    // device that has no direct path ("sim:0 is not a CUDA device"; the first of the devices
    // named, sim:0 here, or the cpu where it takes part).
    std::string all;
    for (const auto& [name, list] : notes)
      for (const auto& [path, why] : list)
        all += name + ": " + path + " (" + why + ")\n";
    INFO("the notes:\n" << all);
    auto has = [&](const std::string& name, const std::string& names) {
      const auto it = notes.find(name);
      if (it == notes.end())
        return false;
      for (const auto& [path, why] : it->second)
        if (path == "store" && why.find(names) != std::string::npos)
          return true;
      return false;
    };
    CHECK(has("all_reduce", "sim:0"));
    CHECK(has("all_gather", "sim:0"));
    CHECK(has("reduce_scatter", "sim:0"));
    CHECK(has("broadcast", "cpu"));
    CHECK(has("to", "sim:0"));
  }
  CHECK(my_shm().empty());
}
