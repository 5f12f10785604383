// Uploads whose values the user's thread writes straight into a store range (runtime_core::stage,
// op_request::staged): the planner places them where they were written and owns the range from
// there; a runtime stages what leaves the store at most half full and sends the rest in the
// request, and either way the values arrive and no range is left behind.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include <actorgraph/actorgraph.hpp>

#include "actors/planner.hpp"
#include "tests/actors/planner_rig.hpp"
#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using Catch::Contains;

namespace {

constexpr std::size_t store_bytes = 64 << 10;

ag::planner_setup with_allocator(std::shared_ptr<ag::store_allocator> a) {
  auto s = setup_of(store_bytes);
  s.store = std::move(a);
  return s;
}

// A planner whose store allocator is shared, as the runtime shares it with the user's threads.
struct staging_rig {
  std::shared_ptr<ag::store_allocator> alloc = std::make_shared<ag::store_allocator>(store_bytes);
  rig r{with_allocator(alloc)};

  // What runtime_core::stage and the user's thread do: a range, the values written into it, and
  // a request naming it (no data of its own).
  ag::op_request staged(uint32_t lane, ag::operand_id out, const std::vector<float>& values) {
    const auto off = alloc->allocate(values.size() * sizeof(float));
    REQUIRE(off);
    std::memcpy(r.store.data() + *off, values.data(), values.size() * sizeof(float));
    auto req = upload(lane, out, {});
    req.count = values.size();
    req.staged = *off;
    return req;
  }

  // Stages and submits an upload; returns its range.
  uint64_t place(uint32_t lane, ag::operand_id out, const std::vector<float>& values) {
    auto req = staged(lane, out, values);
    const uint64_t at = req.staged;
    r.submit(std::move(req));
    r.drain();
    return at;
  }
};

} // namespace

TEST_CASE("a staged upload to the cpu lane is read where the user's thread wrote it",
          "[planner]") {
  staging_rig s;
  const uint64_t at = s.place(cpu, 1, {1, 2, 3});
  const auto* t = s.r.plan.tensor(1);
  REQUIRE(t != nullptr);
  CHECK(t->lane == cpu);
  CHECK(t->offset == at);
  CHECK(s.alloc->live_bytes() == ag::store_allocator::alignment); // no second range
  CHECK(&s.r.plan.store() == s.alloc.get());
  const auto w = s.r.fetch(1);
  CHECK(s.r.out.answer_of(w).offset == at);
  CHECK(s.r.floats_at(at, 3) == std::vector<float>{1, 2, 3});
  s.r.plan.release(1);
  s.r.drain();
  CHECK(s.alloc->live_bytes() == 0);
}

TEST_CASE("a staged upload to a device lane is copied from its range, freed once acknowledged",
          "[planner]") {
  staging_rig s;
  const uint64_t at = s.place(sim0, 2, {5, 6, 7});
  const auto& b = s.r.last_batch(sim0);
  REQUIRE(b.ops.size() == 1);
  CHECK(fields(b.ops[0]) == copy_fields({2, no_offset}, {0, at}, 3));
  CHECK(s.alloc->live_bytes() == ag::store_allocator::alignment);
  s.r.plan.done(sim0, 1, 12);
  CHECK(s.alloc->live_bytes() == 0);
}

TEST_CASE("a staged upload that cannot run gives its range back and fails with why",
          "[planner]") {
  staging_rig s;
  auto req = s.staged(sim0, 3, {1});
  req.where = ag::device::sim(7); // not a device of the planner
  s.r.submit(std::move(req));
  s.r.drain();
  CHECK(s.alloc->live_bytes() == 0);
  REQUIRE(s.r.plan.tensor(3) != nullptr);
  CHECK_THAT(s.r.plan.tensor(3)->failure, Contains("sim:7 is not a device of this runtime"));
}

TEST_CASE("a staged upload larger than half the store is placed whole, not in pieces",
          "[planner]") {
  staging_rig s;
  std::vector<float> v(store_bytes * 3 / 4 / sizeof(float));
  std::iota(v.begin(), v.end(), 0.0f);
  const uint64_t at = s.place(sim0, 4, v);
  const auto& b = s.r.last_batch(sim0);
  REQUIRE(b.ops.size() == 1);
  CHECK(fields(b.ops[0]) == copy_fields({4, no_offset}, {0, at}, v.size()));
}

TEST_CASE("a runtime's uploads arrive whether staged or carried, and leave no store range behind",
          "[process]") {
  for (bool process : {false, true}) {
    INFO((process ? "process" : "thread") << " mode");
    auto opt = sim_options(process, "sim:0");
    opt.store_bytes = std::size_t{1} << 20;
    ag::runtime rt{opt};
    // 64 KiB: staged; 768 KiB: more than half the store, carried in the request (a cpu tensor)
    // and streamed in pieces (a device tensor).
    for (std::size_t n : {std::size_t{16} << 10, std::size_t{192} << 10}) {
      INFO(n << " floats");
      std::vector<float> v(n);
      std::iota(v.begin(), v.end(), 1.0f);
      for (const auto& where : {ag::device::cpu(), ag::device::sim(0)}) {
        INFO(where.str());
        auto t = rt.from_vector({static_cast<int64_t>(n)}, v, where);
        CHECK(t.to_vector() == v);
        if (!where.is_cpu()) // on the cpu the sum would not fit beside it
          CHECK((t + t).to_vector().back() == 2.0f * static_cast<float>(n));
      }
    }
    rt.sync();
    CHECK(rt.stats().store_live_bytes == 0);
  }
}
