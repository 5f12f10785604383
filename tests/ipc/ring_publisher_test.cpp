// Tests of ipc/ring_publisher: how far a child has read is taken from its position in the ring
// (the bytes it read past), Execute frames only, whatever count the child keeps; a reader that
// rejoins counts from what is written next.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "ipc/ring_publisher.hpp"
#include "ipc/shm_channel.hpp"
#include "ipc/wire.hpp"

using namespace std::chrono_literals;

namespace {

std::shared_ptr<ag::shm_channel> channel_of(uint32_t readers) {
  static std::atomic<int> counter{0};
  const std::string name =
    "/ag-test-" + std::to_string(::getpid()) + "-ring-" + std::to_string(++counter);
  auto c = std::make_shared<ag::shm_channel>(
    ag::shm_channel::create(name, readers + 1, readers, std::size_t{64} << 10));
  c->unlink();
  return c;
}

ag::wire::bytes body(std::size_t n) { return ag::wire::bytes(n, 7); }

// Reader r takes its next frame off the ring.
void take(ag::shm_channel& c, uint32_t r) {
  std::vector<char> out;
  REQUIRE(c.ring().read(r, out, std::chrono::steady_clock::now() + 1s));
}

} // namespace

TEST_CASE("what a child read is counted from its position in the ring, Execute frames alone",
          "[shm]") {
  auto c = channel_of(2);
  ag::ring_publisher pub{c, nullptr};
  for (int i = 0; i < 3; ++i)
    REQUIRE(pub.publish(ag::wire::msg_type::execute, body(100 + 10 * i)));
  CHECK(pub.executes_written() == 3);
  CHECK(pub.executes_read(0) == 0);
  take(*c, 0);
  CHECK(pub.executes_read(0) == 1);
  CHECK(pub.executes_read(1) == 0);
  take(*c, 0);
  take(*c, 0);
  CHECK(pub.executes_read(0) == 3);
  // A Destroy is no Execute: read past, it counts nothing more.
  REQUIRE(pub.publish(ag::wire::msg_type::destroy, {}));
  take(*c, 0);
  CHECK(pub.executes_read(0) == 3);
  // Reader 1, which read nothing, still holds every Execute it has not read.
  take(*c, 1);
  CHECK(pub.executes_read(1) == 1);
  REQUIRE(pub.publish(ag::wire::msg_type::execute, body(50)));
  CHECK(pub.executes_read(1) == 1);
  take(*c, 1);
  take(*c, 1);
  CHECK(pub.executes_read(1) == 3);
  // Its child gone and another in its place: it has read everything written so far.
  pub.drop(1);
  pub.rejoin(1);
  CHECK(pub.executes_read(1) == 4);
  REQUIRE(pub.publish(ag::wire::msg_type::execute, body(50)));
  CHECK(pub.executes_read(1) == 4);
  take(*c, 1);
  CHECK(pub.executes_read(1) == 5);
}
