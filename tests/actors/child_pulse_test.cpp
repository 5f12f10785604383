// What the watchdog makes of one look at a child (actors/child_pulse.hpp): caught up, executing
// (inside an operator with its heartbeat going), or showing nothing; and the mark a child's main
// thread beats by (actors/operator_mark.hpp), which wakes it from a doze when an operator starts.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "actors/child_pulse.hpp"
#include "actors/operator_mark.hpp"

using ag::child_pulse;
using sign = child_pulse::sign;

TEST_CASE("a child that has read everything there for it is caught up, whatever the board shows",
          "[planner]") {
  child_pulse p;
  CHECK(p.look(0, 0, 0, 0) == sign::caught_up);
  CHECK(p.look(5, 5, 3, 1) == sign::caught_up);
  CHECK(p.look(6, 5, 0, 1) == sign::caught_up); // read past what the ring holds: not behind
}

TEST_CASE("a child behind is executing while it is inside an operator and beats between looks, "
          "and shows nothing once the beat stops",
          "[planner]") {
  child_pulse p;
  CHECK(p.look(1, 4, 2, 1) == sign::executing);
  CHECK(p.look(1, 4, 2, 5) == sign::executing);
  CHECK(p.look(1, 5, 2, 9) == sign::executing); // more to read behind the same long operator
  CHECK(p.look(1, 5, 2, 9) == sign::none);      // stopped: the mark stays, the beat does not move
  CHECK(p.look(1, 5, 2, 9) == sign::none);
  CHECK(p.look(1, 5, 2, 10) == sign::executing); // continued
}

TEST_CASE("a child behind that beats between operators shows nothing: its reading is what is "
          "late",
          "[planner]") {
  child_pulse p;
  CHECK(p.look(1, 4, 0, 1) == sign::none);
  CHECK(p.look(1, 4, 0, 2) == sign::none);
  CHECK(p.look(1, 4, 0, 3) == sign::none);
}

TEST_CASE("the beat seen while caught up is the one the next look compares with", "[planner]") {
  child_pulse p;
  CHECK(p.look(3, 3, 1, 7) == sign::caught_up);
  CHECK(p.look(3, 4, 1, 7) == sign::none); // it fell behind and has not beaten since
  child_pulse q;
  CHECK(q.look(3, 3, 1, 7) == sign::caught_up);
  CHECK(q.look(3, 4, 1, 8) == sign::executing);
}

TEST_CASE("with no board (the sockets, a node's child) nothing but reading counts", "[planner]") {
  child_pulse p;
  CHECK(p.look(0, 1, 0, 0) == sign::none);
  CHECK(p.look(0, 1, 0, 0) == sign::none);
}

TEST_CASE("a runner entering an operator wakes its dozing main thread once, and a main thread "
          "does not doze while one runs",
          "[planner]") {
  int wakes = 0;
  ag::operator_mark mark{[&] { ++wakes; }};
  CHECK(mark.running() == 0);
  mark.enter(3); // nobody dozes: no wake
  CHECK(wakes == 0);
  CHECK(mark.running() == 3);
  CHECK_FALSE(mark.doze()); // inside an operator: a short sleep, to beat
  mark.enter(4);
  CHECK(wakes == 0);
  mark.leave();
  CHECK(mark.running() == 0);
  REQUIRE(mark.doze());
  mark.enter(5); // woken once
  mark.enter(6);
  CHECK(wakes == 1);
  mark.leave();
  REQUIRE(mark.doze());
  mark.awake(); // woke at the end of its slice: no wake owed
  mark.enter(7);
  CHECK(wakes == 1);
}

TEST_CASE("a main thread dozing while its runner enters an operator on another thread is always "
          "woken or sees it running",
          "[planner]") {
  // The main thread's side as in ag-runner: doze, then sleep up to a long slice unless woken.
  std::mutex m;
  std::condition_variable cv;
  bool woken = false;
  ag::operator_mark mark{[&] {
    std::lock_guard<std::mutex> lock{m};
    woken = true;
    cv.notify_one();
  }};
  for (int round = 0; round < 2000; ++round) {
    {
      std::lock_guard<std::mutex> lock{m};
      woken = false;
    }
    std::thread runner{[&] { mark.enter(static_cast<uint64_t>(round) + 1); }};
    const bool dozing = mark.doze();
    bool seen = !dozing;
    if (dozing) {
      std::unique_lock<std::mutex> lock{m};
      // It saw nothing running as it dozed: the runner's enter, after that, must wake it.
      seen = cv.wait_for(lock, std::chrono::seconds{10}, [&] { return woken; });
    }
    mark.awake();
    runner.join();
    REQUIRE(seen);
    mark.leave();
  }
}
