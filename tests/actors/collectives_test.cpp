// Collectives end to end (include/actorgraph/collectives.hpp, actors/planner_collective.cpp), their
// results: all_reduce, broadcast, all_gather and reduce_scatter over sim devices and the cpu, in
// thread mode and in process mode with real children, checked bit for bit against a host
// computation that adds the parts in the same order; ordering without syncs; releases; a small
// store, several threads, an early end. Errors and faults: collectives_failures_test.cpp; the
// trace and the timeline: collectives_trace_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/collective_helpers.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/actors/random_program.hpp" // same_bits

using namespace ag::test;
using namespace ag::test::collective;
using namespace std::chrono_literals;
using Catch::Contains;

namespace {

using ag::device;
using ag::shape_t;
using ag::tensor;

std::vector<device> sims(int n) {
  std::vector<device> out;
  for (int i = 0; i < n; ++i)
    out.push_back(device::sim(i));
  return out;
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
