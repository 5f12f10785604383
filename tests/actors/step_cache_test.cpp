// step_cache (actors/step_cache.hpp) on its own: which batches are steps it keeps, what makes two
// runs the same step, and its bounds on graphs and on the steps it remembers.
#include <catch2/catch.hpp>

#include <memory>

#include "actors/step_cache.hpp"

namespace {

ag::step_policy on(std::size_t max_graphs = 64) {
  ag::step_policy p;
  p.enabled = true;
  p.max_graphs = max_graphs;
  return p;
}

// Two adds of n elements and a random fill of seed `seed`, ids from `base`: a step.
ag::batch step(uint64_t n, ag::operand_id base, uint64_t seed = 1, double scalar = 0) {
  ag::batch b;
  b.step = 1;
  b.ops.push_back(ag::make_op(ag::op_kind::add, {base}, {1}, {2}, n, 0, 0, 0, scalar));
  b.ops.push_back(ag::make_op(ag::op_kind::add, {base + 1}, {base}, {2}, n, 0, 0, 0));
  b.ops.push_back(ag::make_op(ag::op_kind::random, {base + 2}, {}, {}, n, seed, 0, 7));
  return b;
}

// A graph the cache only counts: nothing to launch.
struct counted_graph final : ag::stream_graph {
  std::size_t nodes() const noexcept override { return 1; }
};

} // namespace

TEST_CASE("the same operators with other ids, scalars and seeds are the same step", "[steps]") {
  ag::step_cache c{on()};
  auto* e = c.see(step(16, 100));
  REQUIRE(e != nullptr);
  CHECK(e->seen == 1);
  CHECK(c.see(step(16, 200, 9, 2.5)) == e);
  CHECK(e->seen == 2);
  CHECK_FALSE(c.wants_graph(*e)); // capture_after 2: recorded on its third run
  CHECK(c.see(step(16, 300)) == e);
  CHECK(c.wants_graph(*e));
  CHECK(c.see(step(32, 100)) != e); // another size
  auto host = step(16, 100);
  host.ops[0].a.offset = 64; // an operand in the store instead of on the device
  CHECK(c.see(host) != e);
  CHECK(c.steps() == 3);
}

TEST_CASE("no step, one operator, graphs off, or an await or a peer operator: not kept",
          "[steps]") {
  ag::step_cache c{on()};
  auto unmarked = step(16, 100);
  unmarked.step = 0;
  CHECK(c.see(unmarked) == nullptr);
  auto one = step(16, 100);
  one.ops.resize(1);
  CHECK(c.see(one) == nullptr);
  for (auto k : {ag::op_kind::await, ag::op_kind::peer_copy, ag::op_kind::peer_export}) {
    auto b = step(16, 100);
    b.ops[1].kind = k;
    CHECK(c.see(b) == nullptr);
  }
  ag::step_cache off{ag::step_policy{}};
  CHECK(off.see(step(16, 100)) == nullptr);
  CHECK(c.steps() == 0);
}

TEST_CASE("a step keeps a graph per binding up to its bound, then its oldest is reused",
          "[steps]") {
  ag::step_cache c{on()};
  auto* e = c.see(step(16, 100));
  for (uint64_t k = 0; k < ag::step_policy::graphs_per_step; ++k) {
    auto& s = c.slot_for(*e);
    s.binding = {k};
    s.graphs.push_back(std::make_unique<counted_graph>());
    s.ready = true;
  }
  CHECK(c.graphs() == ag::step_policy::graphs_per_step);
  CHECK(c.match(*e, {3}, {}) != nullptr); // now the most recent
  auto& again = c.slot_for(*e);           // the oldest: binding 0
  CHECK(again.binding == std::vector<uint64_t>{0});
  CHECK(c.graphs() == ag::step_policy::graphs_per_step);
  CHECK(c.match(*e, {99}, {}) == nullptr);
}

TEST_CASE("past max_graphs the least recently used graph of another step goes first", "[steps]") {
  ag::step_cache c{on(2)};
  ag::step_cache::entry* e[3];
  for (int i = 0; i < 3; ++i) {
    e[i] = c.see(step(16 * (i + 1), 100));
    auto& s = c.slot_for(*e[i]);
    s.binding = {uint64_t(i)};
    s.graphs.push_back(std::make_unique<counted_graph>());
    s.ready = true;
    CHECK(c.graphs() <= 2);
  }
  CHECK(e[0]->graphs.empty()); // the oldest step's graph went
  CHECK(c.match(*e[1], {1}, {}) != nullptr);
  CHECK(c.match(*e[2], {2}, {}) != nullptr);
}

TEST_CASE("steps that never repeat do not grow the cache without bound", "[steps]") {
  ag::step_cache c{on(16)};
  for (uint64_t n = 1; n <= 1000; ++n)
    c.see(step(n, 100));
  CHECK(c.steps() <= 64);
}
