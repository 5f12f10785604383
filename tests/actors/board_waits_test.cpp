// A user's thread's waits on the completion board (actors/board_waits.hpp), driven directly: the
// slot filled by the test as the executor would, the board written as the runners would.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "actorgraph/error.hpp"
#include "actors/board_waits.hpp"

using namespace std::chrono_literals;
using Catch::Contains;

namespace {

struct rig {
  ag::local_board memory{3};
  ag::completion_board& board = memory.board();
  ag::board_waits waits{board, {"cpu", "sim:0", "sim:1"}, 300ms, ag::spin_policy{20us}};

  ag::wait_ticket read_ticket(uint32_t lane, uint64_t index, uint64_t offset) {
    ag::wait_ticket t;
    t.valid = true;
    t.faults = board.faults();
    t.lane = lane;
    t.index = index;
    t.offset = offset;
    return t;
  }
};

} // namespace

TEST_CASE("a read on the board is answered with the ticket's offset once its writer ran",
          "[board]") {
  rig r;
  ag::ticket_slot slot;
  slot.fill(r.read_ticket(1, 2, 4096));
  std::thread runner{[&] { // sim:0 acknowledges its second operator a little later
    std::this_thread::sleep_for(5ms);
    r.board.completed(1, 2, 3);
    r.board.notify();
  }};
  const auto offset = r.waits.read(slot, "to_vector of tensor #7");
  runner.join();
  REQUIRE(offset);
  CHECK(*offset == 4096);
}

TEST_CASE("a read goes back to the executor without a ticket, with an invalid one, or once a "
          "failure came",
          "[board]") {
  rig r;
  ag::ticket_slot never; // the executor is busy: past its patience the caller asks it
  CHECK_FALSE(r.waits.read(never, "to_vector of tensor #1"));
  ag::ticket_slot invalid;
  invalid.fill({});
  CHECK_FALSE(r.waits.read(invalid, "to_vector of tensor #1"));
  ag::ticket_slot stale;
  stale.fill(r.read_ticket(2, 1, 0));
  r.board.fault(); // the planner learnt of a failure after the ticket was taken
  r.board.completed(2, 1, 1);
  CHECK_FALSE(r.waits.read(stale, "to_vector of tensor #1"));
  ag::ticket_slot failed;
  failed.fill(r.read_ticket(1, 1, 0));
  r.board.completed(1, 3, 3); // past the target, but the lane failed first
  r.board.failed(1, 1);
  CHECK_FALSE(r.waits.read(failed, "to_vector of tensor #1"));
}

TEST_CASE("a read whose writer never acknowledges fails at the deadline naming its device",
          "[board]") {
  rig r;
  ag::ticket_slot slot;
  slot.fill(r.read_ticket(2, 5, 0));
  r.board.completed(2, 3, 3);
  CHECK_THROWS_WITH(r.waits.read(slot, "to_vector of tensor #9"),
                    Contains("to_vector of tensor #9: not written within 300 ms")
                      && Contains("sim:1 has not acknowledged it (operator 5, 3 acknowledged)"));
}

TEST_CASE("a sync on the board waits for every lane's entries and names the silent ones",
          "[board]") {
  rig r;
  ag::wait_ticket t;
  t.valid = true;
  t.faults = r.board.faults();
  t.entries = {1, 4, 2};
  ag::ticket_slot done;
  done.fill(t);
  r.board.completed(0, 1, 1);
  r.board.completed(1, 3, 4);
  r.board.completed(2, 2, 2);
  CHECK(r.waits.sync(done));
  t.entries = {1, 6, 2};
  ag::ticket_slot silent;
  silent.fill(t);
  CHECK_THROWS_WITH(r.waits.sync(silent),
                    Contains("sync: no acknowledgement within 300 ms from sim:0 (2 entries "
                             "unacknowledged)"));
}
