// planner::share (tensor::device_bytes): a device tensor of a lane in this process is exported once,
// after its writer, and the user's thread is answered with the export's slot once the lane ran it;
// a share behind held requests waits for them, one of a child's lane or of a cpu tensor is refused
// naming why, and one whose lane stays silent times out naming the lane.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "actors/errc.hpp"
#include "actors/planner.hpp"
#include "tests/actors/planner_rig.hpp"

using namespace ag::test;
using Catch::Contains;

namespace {

uint64_t share(rig& r, ag::operand_id id) {
  const uint64_t w = r.plan.new_wait();
  r.plan.share(w, id);
  r.drain();
  return w;
}

} // namespace

TEST_CASE("a share exports a device tensor once, answered when the export ran", "[planner]") {
  rig r;
  r.submit(upload(sim0, 1, {1, 2, 3}));
  r.drain();
  const auto w = share(r, 1);
  CHECK(r.out.answers.count(w) == 0); // the export is sent, not run
  const auto ops = r.ops_of(sim0);
  REQUIRE(ops.size() == 2);
  CHECK(ops[1].kind == ag::op_kind::peer_export);
  CHECK(ops[1].a.id == 1);
  const uint64_t slot = ops[1].out.offset;
  r.plan.done(sim0, 2, 12);
  REQUIRE(r.out.answers.count(w) == 1);
  CHECK_FALSE(r.out.answer_of(w).code);
  CHECK(r.out.answer_of(w).offset == slot);
  // A second share of it reuses the export and is answered at once.
  const auto again = share(r, 1);
  CHECK(r.out.answer_of(again).offset == slot);
  CHECK(r.ops_of(sim0).size() == 2);
}

TEST_CASE("a share behind a held request waits for it", "[planner]") {
  rig r{setup_of(8192)};
  r.submit(upload(cpu, 1, std::vector<float>(512, 1.0f)));   // 2 KiB, kept
  r.submit(upload(sim0, 2, std::vector<float>(1024, 1.0f))); // 4 KiB, freed once copied
  r.submit(upload(sim0, 3, std::vector<float>(1024, 2.0f))); // 4 KiB: held for that room
  r.drain();
  REQUIRE(r.plan.held() == 1);
  const auto w = share(r, 3);
  CHECK(r.out.answers.count(w) == 0);
  r.plan.done(sim0, 1, 4096); // frees the first range: the upload is placed, then the export sent
  r.drain();
  const auto ops = r.ops_of(sim0);
  REQUIRE(ops.size() == 3);
  CHECK(ops[2].kind == ag::op_kind::peer_export);
  CHECK(ops[2].a.id == 3);
  r.plan.done(sim0, 3, 8192);
  REQUIRE(r.out.answers.count(w) == 1);
  CHECK_FALSE(r.out.answer_of(w).code);
}

TEST_CASE("a share names what it cannot share", "[planner]") {
  SECTION("a cpu tensor, an unknown one") {
    rig r;
    r.submit(upload(cpu, 1, {1}));
    r.drain();
    CHECK_THAT(r.out.answer_of(share(r, 1)).what, Contains("#1: not a device tensor"));
    CHECK_THAT(r.out.answer_of(share(r, 9)).what, Contains("#9: not a device tensor"));
    r.submit(upload(cpu, 2, std::vector<float>(1 << 20, 1.0f))); // more than the whole store
    r.drain();
    const auto& failed = r.out.answer_of(share(r, 2));
    CHECK(failed.code == ag::errc::device_failed);
    CHECK_THAT(failed.what, Contains("store full"));
  }
  SECTION("a lane in a child process") {
    rig r{setup_of(64 << 10, true)};
    r.submit(upload(sim0, 1, {1}));
    r.drain();
    const auto& a = r.out.answer_of(share(r, 1));
    CHECK(a.code == ag::errc::bad_request);
    CHECK_THAT(a.what, Contains("sim:0 runs in a process of its own"));
  }
  SECTION("a lane that never runs the export") {
    rig r;
    r.submit(upload(sim0, 1, {1}));
    r.drain();
    const auto w = share(r, 1);
    REQUIRE(r.out.expiring.count(w) == 1);
    r.plan.expire(w);
    const auto& a = r.out.answer_of(w);
    CHECK(a.code == ag::errc::timeout);
    CHECK(a.what == "device_bytes: tensor #1 not exported within 500 ms: sim:0 has not "
                    "acknowledged it");
  }
}
