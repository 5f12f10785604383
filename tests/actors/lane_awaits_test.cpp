// Awaits: how a lane's operator comes after another local lane's on the completion board, without
// an acknowledgement between them. The board's await_op, batch runners on sim streams awaiting
// each other from their own threads, and the planner that sends them (graph/op.hpp, op_kind::await).
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actorgraph/device.hpp"
#include "actors/batch_runner.hpp"
#include "ipc/completion_board.hpp"
#include "planner_collective_helpers.hpp"
#include "planner_rig.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

using outcome = ag::completion_board::await_outcome;

std::chrono::steady_clock::time_point in(std::chrono::milliseconds ms) {
  return std::chrono::steady_clock::now() + ms;
}

// What a runner answers, from whichever thread runs it.
struct answers final : ag::runner_answers {
  std::mutex m;
  std::vector<uint64_t> done_counts;
  std::vector<std::string> failures;

  void done(uint32_t, uint64_t ops_done, uint64_t, uint64_t) override {
    std::lock_guard<std::mutex> lock{m};
    done_counts.push_back(ops_done);
  }
  void failed(uint32_t, uint64_t, std::string what) override {
    std::lock_guard<std::mutex> lock{m};
    failures.push_back(std::move(what));
  }
  std::string first_failure() {
    std::lock_guard<std::mutex> lock{m};
    return failures.empty() ? std::string{} : failures.front();
  }
};

// A store of 16 ranges of 64 floats, and runners of sim lanes on one board.
struct lanes_on_board {
  static constexpr std::size_t range = 64 * sizeof(float);
  std::vector<std::byte> store = std::vector<std::byte>(16 * range);
  ag::local_board board{3};

  ag::batch_runner_setup setup(uint32_t lane, std::chrono::milliseconds timeout,
                               bool with_board = true) {
    ag::batch_runner_setup s;
    s.lane = lane;
    s.dev = ag::device::sim(static_cast<int32_t>(lane) - 1);
    s.store_base = store.data();
    s.store_size = store.size();
    s.board = with_board ? &board.board() : nullptr;
    s.exports.timeout = timeout;
    return s;
  }
  float at(int r) const {
    float x = 0;
    std::memcpy(&x, store.data() + r * range, sizeof x);
    return x;
  }
};

ag::operand_ref range(int r) { return {0, static_cast<uint64_t>(r) * lanes_on_board::range}; }

ag::op_desc fill(int r, float x) {
  ag::op_desc op = make_op(ag::op_kind::fill, range(r), {}, {}, 64, 0, 0, 0);
  op.scalar = x;
  return op;
}

ag::op_desc add(int out, int a, int b) {
  return {ag::op_kind::add, range(out), range(a), range(b), 64, 0, 0, 0};
}

ag::op_desc await_op(uint32_t lane, uint64_t index) {
  return {ag::op_kind::await, {}, {}, {}, 0, index, lane, 0};
}

ag::batch batch_of(uint32_t lane, std::vector<ag::op_desc> ops) {
  ag::batch b;
  b.lane = lane;
  b.ops = std::move(ops);
  return b;
}

} // namespace

// -- the board ------------------------------------------------------------------------------------

TEST_CASE("an await on the board ends when the lane counts the operator, fails, or the runtime "
          "stops, and not on another lane's fault",
          "[awaits][board]") {
  ag::local_board local{3};
  auto& board = local.board();
  CHECK(board.await_op(1, 1, in(20ms), {}) == outcome::timed_out);
  board.completed(1, 1, 1);
  CHECK(board.await_op(1, 1, in(20ms), {}) == outcome::reached);
  CHECK(board.await_op(1, 2, in(20ms), {}) == outcome::timed_out);

  board.fault(); // another lane's failure, a user's wait gone stale: no end of this wait
  CHECK(board.await_op(1, 2, in(20ms), {}) == outcome::timed_out);

  auto later = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(30ms);
    board.completed(1, 2, 2);
    board.notify();
  });
  CHECK(board.await_op(1, 2, in(10s), {0ns}) == outcome::reached); // asleep, woken
  later.get();

  board.failed(2, 0);
  CHECK(board.await_op(2, 1, in(10s), {}) == outcome::lane_failed);
  CHECK(board.await_op(1, 3, in(20ms), {}) == outcome::timed_out);
  board.stop();
  CHECK(board.stopped());
  CHECK(board.await_op(1, 3, in(10s), {}) == outcome::stopped);
  CHECK(board.await_op(1, 2, in(10s), {}) == outcome::reached); // what was counted still is
  CHECK(board.await_op(7, 1, in(10s), {}) == outcome::lane_failed); // no such lane
}

// -- the batch runner -----------------------------------------------------------------------------

TEST_CASE("runners publish what they ran before an await, so two lanes awaiting each other within "
          "one batch each finish",
          "[awaits][board]") {
  lanes_on_board w;
  answers a1, a2;
  ag::batch_runner r1{w.setup(1, 5000ms), a1};
  ag::batch_runner r2{w.setup(2, 5000ms), a2};
  // Lane 1: range 0 = 1; after lane 2's operator 2, range 3 = range 2 + range 0.
  // Lane 2: after lane 1's operator 1, range 2 = range 0 + range 0.
  const auto b1 = batch_of(1, {fill(0, 1.0f), await_op(2, 2), add(3, 2, 0)});
  const auto b2 = batch_of(2, {await_op(1, 1), add(2, 0, 0)});
  auto t2 = std::async(std::launch::async, [&] { r2.execute(b2, false); });
  r1.execute(b1, false);
  t2.get();
  CHECK(a1.first_failure().empty());
  CHECK(a2.first_failure().empty());
  CHECK(w.at(2) == 2.0f);
  CHECK(w.at(3) == 3.0f);
  CHECK(w.board.board().ops(1) == 3);
  CHECK(w.board.board().ops(2) == 2);
  CHECK(w.board.board().running_at(1) == 0);
}

TEST_CASE("an await ends when the awaited lane fails or the runtime stops, and its runner goes on",
          "[awaits][board]") {
  const bool stop = GENERATE(false, true);
  lanes_on_board w;
  answers a;
  ag::batch_runner r{w.setup(1, 10000ms), a};
  auto end = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(50ms);
    if (stop)
      w.board.board().stop();
    else
      w.board.board().failed(2, 0);
  });
  r.execute(batch_of(1, {await_op(2, 5), fill(4, 4.0f)}), false);
  end.get();
  CHECK(a.first_failure().empty());
  CHECK(w.at(4) == 4.0f);
  CHECK(w.board.board().ops(1) == 2);
}

TEST_CASE("an await fails once the awaited lane shows no progress for wait_timeout, and not while "
          "it does",
          "[awaits][board]") {
  lanes_on_board w;
  answers a;
  ag::batch_runner r{w.setup(1, 300ms), a};
  SECTION("silent") {
    r.execute(batch_of(1, {fill(0, 1.0f), await_op(2, 1), fill(1, 2.0f)}), false);
    CHECK_THAT(a.first_failure(), Contains("sim:0: await operator 1 of lane 2: that lane showed "
                                           "no progress for 300 ms (graph_option::wait_timeout)"));
    CHECK(w.at(0) == 1.0f);
    CHECK(w.at(1) == 0.0f); // what follows the await did not run
  }
  SECTION("busy with a long operator, its heartbeat going") {
    auto beats = std::async(std::launch::async, [&] {
      for (int i = 0; i < 20; ++i) { // a second, three times the timeout
        std::this_thread::sleep_for(50ms);
        w.board.board().beat(2);
      }
      w.board.board().completed(2, 1, 1);
      w.board.board().notify();
    });
    r.execute(batch_of(1, {await_op(2, 1), fill(1, 2.0f)}), false);
    beats.get();
    CHECK(a.first_failure().empty());
    CHECK(w.at(1) == 2.0f);
  }
}

TEST_CASE("an await without a board, or on its own lane, fails naming why", "[awaits][board]") {
  lanes_on_board w;
  answers a;
  SECTION("no board") {
    ag::batch_runner r{w.setup(1, 300ms, false), a};
    r.execute(batch_of(1, {await_op(2, 1)}), false);
    CHECK_THAT(a.first_failure(), Contains("await operator 1 of lane 2: no completion board"));
  }
  SECTION("its own lane, a lane the board does not have") {
    const uint32_t lane = GENERATE(1u, 9u);
    ag::batch_runner r{w.setup(1, 300ms), a};
    r.execute(batch_of(1, {await_op(lane, 1)}), false);
    CHECK_THAT(a.first_failure(), Contains("is not another lane of the 3 on the board"));
  }
}

// -- the planner ----------------------------------------------------------------------------------

namespace {

using namespace ag::test;

// A rig whose planner has a board, as on the shared-memory path, or none (the sockets).
struct await_rig {
  ag::local_board board{3};
  rig r;

  explicit await_rig(bool with_board) : r(setup(with_board, board)) {}
  static ag::planner_setup setup(bool with_board, ag::local_board& b) {
    auto s = setup_of();
    if (with_board)
      s.board = &b.board();
      s.runners_see_board = true;
    return s;
  }
  // #1 on sim:0, #2 on sim:1, uploaded and acknowledged.
  void parts() {
    r.submit(upload(sim0, 1, {1, 2, 3, 4}));
    r.submit(upload(sim1, 2, {10, 20, 30, 40}));
    r.drain();
    for (uint32_t l : {cpu, sim0, sim1})
      r.plan.done(l, r.plan.lane(l).sent, 0);
  }
  std::size_t queued() const {
    return r.plan.lane(cpu).queue.size() + r.plan.lane(sim0).queue.size()
           + r.plan.lane(sim1).queue.size();
  }
};

} // namespace

TEST_CASE("on the board queued all_reduces go out at once, each operator after another lane's "
          "behind an await, and without one they wait for acknowledgements",
          "[awaits][planner][collectives]") {
  const bool with_board = GENERATE(true, false);
  await_rig w{with_board};
  w.parts();
  for (ag::operand_id i = 0; i < 20; ++i) // 60 staging ranges of 256 bytes: the store holds them
    w.r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1},
                          {100 + 2 * i, 101 + 2 * i}, {sim0, sim1}, 4));
  w.r.drain();
  if (!with_board) {
    CHECK(w.queued() > 0);
    CHECK(count_kind(w.r.ops_of(sim0), ag::op_kind::await) == 0);
    return;
  }
  CHECK(w.queued() == 0);
  // sim:0: its stage, then an await of the cpu's sum and the copy back, for each.
  const auto ops = w.r.ops_of(sim0);
  REQUIRE(ops.size() >= 60);
  const auto first = ops.size() - 60;
  CHECK(ops[first].kind == ag::op_kind::copy);
  CHECK(ops[first + 1].kind == ag::op_kind::await);
  CHECK(ops[first + 1].k == cpu);
  CHECK(ops[first + 2].kind == ag::op_kind::copy);
  CHECK(count_kind(ops, ag::op_kind::await) == 20);
  // The cpu's sum awaits both stages.
  const auto sums = w.r.ops_of(cpu);
  CHECK(count_kind(sums, ag::op_kind::await) == 40);
  CHECK(count_kind(sums, ag::op_kind::add) == 20);
}

TEST_CASE("a lane failing before it ran what sent operators await taints what they wrote, and what "
          "was computed from it on their lanes, and a lane that ran it first taints nothing",
          "[awaits][planner][collectives]") {
  const bool cpu_ran_sum = GENERATE(false, true);
  await_rig w{true};
  w.parts();
  w.r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1}, {3, 4},
                        {sim0, sim1}, 4));
  w.r.submit(compute(ag::op_kind::add, sim0, 5, 3, 3, 4)); // from the result on its own lane
  w.r.submit(compute(ag::op_kind::add, sim0, 6, 1, 1, 4)); // from the part alone
  w.r.drain();
  REQUIRE(w.queued() == 0); // all sent
  // Both stages ran; the cpu ran its sum (two awaits, the add) or not.
  w.r.plan.done(sim0, w.r.plan.lane(sim0).sent - 4, 0);
  w.r.plan.done(sim1, w.r.plan.lane(sim1).sent - 2, 0);
  if (cpu_ran_sum)
    w.r.plan.done(cpu, w.r.plan.lane(cpu).sent, 0);
  w.r.plan.failed(cpu, 0, "cpu: boom");
  for (ag::operand_id id : {3, 4, 5}) {
    INFO("#" << id);
    REQUIRE(w.r.plan.tensor(id) != nullptr);
    if (cpu_ran_sum)
      CHECK(w.r.plan.tensor(id)->failure.empty());
    else
      CHECK_THAT(w.r.plan.tensor(id)->failure, Contains("boom"));
  }
  CHECK(w.r.plan.tensor(6)->failure.empty());
  CHECK(w.board.board().lane_failed(cpu)); // a runner awaiting the cpu goes on
}

namespace {

// A planner on a board with #1 on sim:0 and #2 on sim:1, acknowledged; then 7000 all_reduces of
// them (21 000 operators on each lane) that sim:1 acknowledges nothing of: it stopped.
struct behind_stopped_sim1 {
  static constexpr ag::operand_id count = 7000;
  ag::local_board board{3};
  rig r{setup(board)};
  uint64_t done0 = 0, done1 = 0;

  behind_stopped_sim1() {
    r.submit(upload(sim0, 1, {1, 2, 3, 4}));
    r.submit(upload(sim1, 2, {10, 20, 30, 40}));
    r.drain();
    for (uint32_t l : {cpu, sim0, sim1})
      r.plan.done(l, r.plan.lane(l).sent, 0);
    done0 = r.plan.lane(sim0).done;
    done1 = r.plan.lane(sim1).done;
    for (ag::operand_id i = 0; i < count; ++i)
      r.submit(collective(ag::collective_kind::all_reduce, {1, 2}, {sim0, sim1},
                          {100 + 2 * i, 101 + 2 * i}, {sim0, sim1}, 4));
    r.drain();
  }
  static ag::planner_setup setup(ag::local_board& b) {
    auto s = setup_of(std::size_t{8} << 20); // room for the staging of every all_reduce
    s.board = &b.board();
    s.runners_see_board = true;
    return s;
  }
};

} // namespace

TEST_CASE("awaits go out at most await_window operators ahead of what the lane they wait for "
          "acknowledged, and a failure of that lane taints what was sent and what was held alike",
          "[awaits][planner][collectives]") {
  behind_stopped_sim1 w;
  auto& r = w.r;
  const uint64_t done0 = w.done0, done1 = w.done1;
  constexpr ag::operand_id count = behind_stopped_sim1::count;
  CHECK(r.plan.lane(cpu).queue.size() > 0); // held, not sent
  for (const auto& op : r.ops_of(cpu))
    if (op.kind == ag::op_kind::await)
      CHECK(op.m <= (op.k == sim0 ? done0 : done1) + ag::planner::await_window);
  r.plan.failed(sim1, 0, "sim:1: boom");
  std::size_t tainted = 0;
  for (ag::operand_id id = 100; id < 100 + 2 * count; ++id)
    if (const auto* t = r.plan.tensor(id); t != nullptr && t->failure.find("boom") != std::string::npos)
      ++tainted;
  CHECK(tainted == 2 * count);
}

TEST_CASE("after a lane fails, what the others still hold of work computed from its loss goes out "
          "at once as NaN stand-ins, their awaits emptied",
          "[awaits][planner][collectives][faults]") {
  // The cpu's sums wait for sim:1, sim:0's copies back for them, and beyond the await window both
  // lanes hold what they have not sent.
  behind_stopped_sim1 w;
  auto& r = w.r;
  constexpr ag::operand_id count = behind_stopped_sim1::count;
  REQUIRE(r.plan.lane(cpu).queue.size() > 0);
  REQUIRE(r.plan.lane(sim0).queue.size() > 0);
  const auto cpu_ops_before = r.ops_of(cpu).size(), sim0_ops_before = r.ops_of(sim0).size();

  r.plan.failed(sim1, 0, "sim:1: boom");
  r.drain();
  // Nothing is held back any more: each lane's runner can run the rest without waiting.
  CHECK(r.plan.lane(cpu).queue.empty());
  CHECK(r.plan.lane(sim0).queue.empty());
  const auto cpu_ops = r.ops_of(cpu), sim0_ops = r.ops_of(sim0);
  std::size_t emptied = 0, adds = 0, nan_fills = 0, copies = 0;
  for (std::size_t i = cpu_ops_before; i < cpu_ops.size(); ++i) {
    const auto& op = cpu_ops[i];
    if (op.kind == ag::op_kind::await)
      emptied += op.m == 0;
    adds += op.kind == ag::op_kind::add;
    nan_fills += op.kind == ag::op_kind::fill && std::isnan(op.scalar);
  }
  CHECK(adds == 0);
  CHECK(nan_fills > 0);
  CHECK(emptied == 2 * nan_fills); // the sum's await of each stage
  CHECK(count_kind(std::vector<ag::op_desc>(cpu_ops.begin() + cpu_ops_before, cpu_ops.end()),
                   ag::op_kind::await)
        == emptied);
  emptied = nan_fills = 0;
  for (std::size_t i = sim0_ops_before; i < sim0_ops.size(); ++i) {
    const auto& op = sim0_ops[i];
    if (op.kind == ag::op_kind::await) {
      CHECK(op.m == 0);
      ++emptied;
    }
    nan_fills += op.kind == ag::op_kind::fill && std::isnan(op.scalar);
    copies += op.kind == ag::op_kind::copy;
  }
  CHECK(nan_fills > 0);
  CHECK(emptied == nan_fills); // each copy back's await of its sum
  CHECK(copies <= nan_fills);  // the stages not sent yet, which read sim:0's healthy part
  // Every result reads as the failure.
  for (ag::operand_id id = 100; id < 100 + 2 * count; ++id)
    REQUIRE_THAT(r.plan.tensor(id)->failure, Contains("boom"));
}
