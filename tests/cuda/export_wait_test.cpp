// The wait of a reader for another child's export (cuda/export_wait.hpp) and what a runner does
// with its outcome (cuda/naive_runner.cpp): over a heap buffer as the tensor store and the CPU
// stream of sim:0, which cannot map another process's memory, so that every path before the
// mapping runs here: a slot the exporter writes later, one the controller marks gone (the read
// writes NaN), one never written (an error at the deadline naming the export).
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

#include "actorgraph/error.hpp"
#include "cuda/export_wait.hpp"
#include "cuda/kernel_stream.hpp"
#include "cuda/naive_runner.hpp"
#include "graph/export_slot.hpp"

using namespace std::chrono_literals;
using Catch::Contains;

namespace {

constexpr std::size_t store_size = 4096;
constexpr uint64_t slot_at = 256;

struct store {
  alignas(256) std::byte bytes[store_size] = {};
  std::byte* slot() { return bytes + slot_at; }
};

ag::export_slot written_by(uint32_t lane) {
  ag::export_slot x;
  x.lane = lane;
  x.pid = 4242;
  x.bytes = 16;
  x.handle[0] = 'h';
  x.event[0] = 'e';
  return x;
}

// A peer_copy of operand #7 (4 elements) of lane 2 into #9, through the export at slot_at.
ag::op_desc imported_copy() {
  return ag::make_op(ag::op_kind::peer_copy, {9, ag::operand_ref::no_offset},
                     {7, ag::operand_ref::no_offset}, {0, slot_at}, 4, 0, 2, 0);
}

} // namespace

TEST_CASE("a reader's wait ends when the exporter writes the slot, with every field there",
          "[export-wait]") {
  store s;
  ag::export_slots::clear(s.slot());
  std::thread exporter{[&] {
    std::this_thread::sleep_for(5ms); // past the spin: the wait sleeps, then sees it
    ag::export_slots::publish(s.slot(), written_by(2));
  }};
  const auto state = ag::wait_for_export(s.slot(), {std::chrono::microseconds{100}, 10000ms});
  exporter.join();
  CHECK(state == ag::export_state::ready);
  ag::export_slot x;
  std::memcpy(&x, s.slot(), sizeof x);
  CHECK(x.lane == 2);
  CHECK(x.pid == 4242);
  CHECK(x.handle[0] == 'h');
  CHECK(x.event[0] == 'e');
}

TEST_CASE("a slot marked gone ends the wait, written or not, and a cleared one waits again",
          "[export-wait]") {
  store s;
  CHECK(ag::export_slots::mark_gone(s.slot()) == ag::export_state::pending);
  CHECK(ag::wait_for_export(s.slot(), {0ns, 10000ms}) == ag::export_state::gone);
  ag::export_slots::clear(s.slot());
  ag::export_slots::publish(s.slot(), written_by(1));
  CHECK(ag::export_slots::mark_gone(s.slot()) == ag::export_state::ready);
  CHECK(ag::wait_for_export(s.slot(), {0ns, 10000ms}) == ag::export_state::gone);
  ag::export_slots::clear(s.slot());
  CHECK(ag::export_slots::load(s.slot()) == ag::export_state::pending);
}

TEST_CASE("a slot nobody writes ends the wait at its deadline, pending", "[export-wait]") {
  store s;
  const auto start = std::chrono::steady_clock::now();
  CHECK(ag::wait_for_export(s.slot(), {std::chrono::microseconds{50}, 30ms})
        == ag::export_state::pending);
  CHECK(std::chrono::steady_clock::now() - start >= 30ms);
}

TEST_CASE("clear_all clears the slot of each peer_export of a batch inside the store, nothing "
          "else",
          "[export-wait]") {
  store s;
  ag::export_slots::publish(s.slot(), written_by(1));
  ag::export_slots::publish(s.bytes + 1024, written_by(1));
  ag::batch b;
  b.ops.push_back(ag::make_op(ag::op_kind::peer_export, {0, slot_at},
                              {3, ag::operand_ref::no_offset}, {}, 4, 0, 0, 0));
  b.ops.push_back(ag::make_op(ag::op_kind::copy, {0, 1024}, {3, ag::operand_ref::no_offset}, {},
                              4, 0, 0, 0));
  b.ops.push_back(ag::make_op(ag::op_kind::peer_export, {0, store_size - 8},
                              {3, ag::operand_ref::no_offset}, {}, 4, 0, 0, 0)); // outside
  ag::export_slots::clear_all(b, s.bytes, store_size);
  CHECK(ag::export_slots::load(s.slot()) == ag::export_state::pending);
  CHECK(ag::export_slots::load(s.bytes + 1024) == ag::export_state::ready);
}

TEST_CASE("a runner's read of an export its exporter never wrote: NaN once the slot is gone, an "
          "error naming the export at the deadline",
          "[export-wait]") {
  store s;
  auto stream = ag::make_stream(ag::device::sim(0));
  SECTION("gone: the result is written, all NaN, and the lane goes on") {
    ag::naive_runner runner{*stream, s.bytes, store_size, 1, nullptr, {0ns, 10000ms}};
    std::thread controller{[&] {
      std::this_thread::sleep_for(2ms);
      ag::export_slots::mark_gone(s.slot());
    }};
    runner.run(imported_copy());
    controller.join();
    runner.run(ag::make_op(ag::op_kind::copy, {0, 2048}, {9, ag::operand_ref::no_offset}, {}, 4,
                           0, 0, 0));
    std::vector<float> v(4);
    std::memcpy(v.data(), s.bytes + 2048, sizeof(float) * 4);
    for (float x : v)
      CHECK(std::isnan(x));
  }
  SECTION("never written: an error at the deadline that names the operand, its lane and slot") {
    ag::naive_runner runner{*stream, s.bytes, store_size, 1, nullptr, {0ns, 20ms}};
    CHECK_THROWS_WITH(runner.run(imported_copy()),
                      Contains("the export of operand #7 of lane 2 (slot at store@256) was not "
                               "written within 20 ms"));
    CHECK(runner.live_operands() == 0);
  }
  SECTION("written by another lane: an error naming the lane that wrote it") {
    ag::naive_runner runner{*stream, s.bytes, store_size, 1, nullptr, {0ns, 1000ms}};
    ag::export_slots::publish(s.slot(), written_by(3));
    CHECK_THROWS_WITH(runner.run(imported_copy()), Contains("was written by lane 3"));
  }
  SECTION("written: a sim stream refuses to map another process's memory, naming its device") {
    ag::naive_runner runner{*stream, s.bytes, store_size, 1, nullptr, {0ns, 1000ms}};
    ag::export_slots::publish(s.slot(), written_by(2));
    CHECK_THROWS_WITH(runner.run(imported_copy()),
                      Contains("sim:0: cannot map the memory of lane 2"));
  }
}
