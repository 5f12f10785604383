// Tests of the shared-memory path (ipc/futex_wait, ipc/broadcast_ring, ipc/completion_board,
// ipc/shm_channel) over real memory and, where a second process is the point, real forked
// children: every message reaches every reader whole and in order, the writer never overwrites
// what a reader has not read, every wait ends at its deadline or with a wake-up, a failure or a
// fault is never read as success, and the shared-memory object goes with its creator.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/broadcast_ring.hpp"
#include "ipc/completion_board.hpp"
#include "ipc/futex_wait.hpp"
#include "ipc/shm_channel.hpp"
#include "ipc/tensor_store.hpp"
#include "tests/actors/process_helpers.hpp"

using ag::broadcast_ring;
using ag::completion_board;
using ag::local_board;
using ag::shm_channel;
using ag::spin_policy;
using ag::test::read_until_closed;
using ag::test::within;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using outcome = completion_board::outcome;

namespace {

constexpr spin_policy no_spin{std::chrono::nanoseconds{0}};

// "/ag-test-<pid>-shm-<random>-<n>": a name no other test run uses.
std::string unique_name() {
  static std::atomic<int> counter{0};
  static const unsigned salt = std::random_device{}() % 1000000;
  return "/ag-test-" + std::to_string(::getpid()) + "-shm-" + std::to_string(salt) + "-"
         + std::to_string(++counter);
}

bool exists_in_dev_shm(const std::string& name) {
  struct stat st {};
  return ::stat(("/dev/shm" + name).c_str(), &st) == 0;
}

// Zeroed memory aligned to 64 bytes, as a ring or a board is laid out in.
class aligned_memory {
public:
  explicit aligned_memory(std::size_t bytes)
    : bytes_(bytes), data_(static_cast<std::byte*>(::operator new(bytes, std::align_val_t{64}))) {
    std::memset(data_, 0, bytes_);
  }
  ~aligned_memory() { ::operator delete(data_, std::align_val_t{64}); }
  aligned_memory(const aligned_memory&) = delete;
  aligned_memory& operator=(const aligned_memory&) = delete;

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return bytes_; }

private:
  std::size_t bytes_;
  std::byte* data_;
};

// A ring in this process's memory.
struct local_ring {
  aligned_memory memory;
  broadcast_ring ring;
  local_ring(std::size_t capacity, uint32_t readers)
    : memory(broadcast_ring::bytes_for(capacity, readers)),
      ring(broadcast_ring::format(memory.data(), memory.size(), capacity, readers)) {}
};

// The bytes of message `seq` of `size` bytes: they depend on both, so a message that is cut
// short, shifted, torn or swapped with another does not compare equal.
std::vector<char> pattern(uint64_t seq, std::size_t size) {
  std::vector<char> out(size);
  uint64_t x = (seq + 1) * 0x9E3779B97F4A7C15ull ^ (size << 1) ^ 1;
  for (auto& c : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x >> 24);
  }
  return out;
}

// Sizes around every multiple of 8 that matters (records are padded), up to the largest message
// of a 4 KiB ring (2040 bytes).
const std::vector<std::size_t> sizes_4k = {0,   1,   2,   7,   8,   9,    15,   16,   17,   31,
                                           63,  64,  65,  127, 255, 333,  1000, 1021, 2031, 2032,
                                           2033, 2039, 2040};

std::size_t size_of(uint64_t seq) { return sizes_4k[(seq * 7 + seq / 13) % sizes_4k.size()]; }

// `msg` as `pieces` parts (1 to 3), cut at uneven places.
std::vector<broadcast_ring::part> parts_of(const std::vector<char>& msg, int pieces) {
  std::vector<broadcast_ring::part> parts;
  std::size_t at = 0;
  for (int i = 1; i < pieces; ++i) {
    const std::size_t cut = std::min(msg.size(), at + msg.size() / 3 + 1);
    parts.push_back({msg.data() + at, cut - at});
    at = cut;
  }
  parts.push_back({msg.data() + at, msg.size() - at});
  return parts;
}

bool try_send(broadcast_ring& ring, const std::vector<char>& msg, int pieces = 1) {
  const auto parts = parts_of(msg, pieces);
  return ring.try_write(parts.data(), parts.size());
}

bool send(broadcast_ring& ring, const std::vector<char>& msg, clock_type::time_point deadline,
          spin_policy spin = {}) {
  const broadcast_ring::part p{msg.data(), msg.size()};
  return ring.write(&p, 1, deadline, spin);
}

// The message of the ag::error that `f` throws; fails the test when it throws none.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ag::error& e) {
    return e.what();
  }
  FAIL_CHECK("no ag::error was thrown");
  return {};
}

// A forked child that runs `body` and exits with what it returns (_exit: the parent's objects,
// the shared-memory object's owner among them, are not destroyed in the child). Killed and
// reaped should the test end before it does.
class child_process {
public:
  template <class Body>
  explicit child_process(Body body) {
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      int code = 97;
      try {
        code = body();
      } catch (...) {
        code = 98;
      }
      ::_exit(code);
    }
  }
  ~child_process() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  // Its wait status once it has exited, if it did by the deadline.
  std::optional<int> wait(clock_type::time_point deadline) {
    while (!status_) {
      int status = 0;
      const pid_t reaped = ::waitpid(pid_, &status, WNOHANG);
      if (reaped == pid_)
        status_ = status;
      else if (clock_type::now() >= deadline)
        break;
      else
        std::this_thread::sleep_for(2ms);
    }
    return status_;
  }

private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

std::string describe(const std::optional<int>& status) {
  if (!status)
    return "still running at its deadline";
  if (WIFEXITED(*status))
    return "exited with code " + std::to_string(WEXITSTATUS(*status));
  if (WIFSIGNALED(*status))
    return "was killed by signal " + std::to_string(WTERMSIG(*status));
  return "ended with status " + std::to_string(*status);
}

bool exited_zero(const std::optional<int>& status) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

// A line for the parent, through the pipe `fd`.
void report(int fd, const std::string& line) {
  const std::string text = line + "\n";
  [[maybe_unused]] const auto n = ::write(fd, text.data(), text.size());
}

} // namespace

// -- broadcast_ring -------------------------------------------------------------------------------

TEST_CASE("every reader gets every message whole and in order, records that wrap around the end "
          "of the ring included",
          "[shm]") {
  local_ring t(4096, 3);
  auto& ring = t.ring;
  REQUIRE(ring.capacity() == 4096);
  REQUIRE(ring.readers() == 3);
  REQUIRE(ring.max_message() == 2040);

  // Rounds: reader 0 reads each message as it comes; readers 1 and 2 read the round once the
  // ring takes no more. Record positions, measured through reader 2's unread bytes, show which
  // records cross the end of the buffer.
  uint64_t written = 0;
  uint64_t pos = 0;
  int wrapped = 0;
  std::vector<char> out;
  for (int round = 0; round < 400; ++round) {
    const uint64_t first = written;
    for (;;) {
      const auto msg = pattern(written, size_of(written));
      const uint64_t before = ring.unread(2);
      if (!try_send(ring, msg, static_cast<int>(written % 3) + 1))
        break;
      const uint64_t record = ring.unread(2) - before;
      REQUIRE(record >= msg.size());
      if (pos % ring.capacity() + record > ring.capacity())
        ++wrapped;
      pos += record;
      REQUIRE(ring.readable(0));
      REQUIRE(ring.read(0, out, clock_type::now() + 1s));
      REQUIRE(out == msg);
      ++written;
    }
    REQUIRE(written > first);
    CHECK(ring.unread(0) == 0);
    CHECK(ring.unread(1) == ring.unread(2));
    for (uint32_t r = 1; r < 3; ++r) {
      for (uint64_t seq = first; seq < written; ++seq) {
        INFO("reader " << r << ", message " << seq << " of " << size_of(seq) << " bytes");
        REQUIRE(ring.readable(r));
        REQUIRE(ring.read(r, out, clock_type::now() + 1s));
        REQUIRE(out == pattern(seq, size_of(seq)));
      }
      CHECK_FALSE(ring.readable(r));
      CHECK(ring.unread(r) == 0);
    }
  }
  CHECK(ring.messages() == written);
  for (uint32_t r = 0; r < 3; ++r)
    CHECK(ring.read_messages(r) == written);
  INFO(written << " messages, " << wrapped << " of them across the end of the buffer");
  CHECK(wrapped > 100);
}

TEST_CASE("a ring formatted in memory is found there by attach, which reads what the writer wrote",
          "[shm]") {
  local_ring t(8192, 2);
  auto reader = broadcast_ring::attach(t.memory.data(), t.memory.size());
  REQUIRE(reader);
  CHECK(reader.capacity() == 8192);
  CHECK(reader.readers() == 2);
  CHECK(reader.max_message() == t.ring.max_message());
  // Less than a ringful in all: neither reader has read yet.
  for (uint64_t seq = 0; seq < 20; ++seq)
    REQUIRE(try_send(t.ring, pattern(seq, seq * 37)));
  CHECK(reader.messages() == 20);
  std::vector<char> out;
  for (uint64_t seq = 0; seq < 20; ++seq) {
    REQUIRE(reader.read(1, out, clock_type::now() + 1s));
    REQUIRE(out == pattern(seq, seq * 37));
  }
  CHECK(t.ring.read_messages(1) == 20);
  CHECK(t.ring.read_messages(0) == 0);
}

TEST_CASE("a reader that does not read holds the writer back, and loses nothing", "[shm]") {
  local_ring t(4096, 2);
  auto& ring = t.ring;
  std::vector<char> out;
  // Reader 0 keeps up; reader 1 reads nothing until the ring is full.
  uint64_t n = 0;
  while (try_send(ring, pattern(n, size_of(n)))) {
    REQUIRE(ring.read(0, out, clock_type::now() + 1s));
    REQUIRE(out == pattern(n, size_of(n)));
    REQUIRE(++n < 10000);
  }
  REQUIRE(n > 1);
  const uint64_t unread = ring.unread(1);
  CHECK(unread <= ring.capacity());
  CHECK(ring.messages() == n);
  CHECK_FALSE(ring.readable(0));

  // Full: nothing more goes in, however the writer asks.
  const auto next = pattern(n, size_of(n));
  CHECK_FALSE(try_send(ring, next));
  CHECK_FALSE(send(ring, next, clock_type::now() + 30ms));
  CHECK_FALSE(send(ring, next, clock_type::now() + 30ms, no_spin));
  CHECK(ring.messages() == n);
  CHECK(ring.unread(1) == unread);
  CHECK_FALSE(ring.readable(0));

  SECTION("the slow reader then reads every message intact, in order, and the writer has room") {
    for (uint64_t seq = 0; seq < n; ++seq) {
      INFO("message " << seq);
      REQUIRE(ring.read(1, out, clock_type::now() + 1s));
      REQUIRE(out == pattern(seq, size_of(seq)));
    }
    CHECK_FALSE(ring.readable(1));
    CHECK(ring.unread(1) == 0);
    CHECK(try_send(ring, next));
  }

  SECTION("once the slow reader is dropped the writer has room, and its next read throws") {
    ring.drop(1);
    CHECK(ring.dropped(1));
    CHECK_FALSE(ring.dropped(0));
    // Many ringfuls more: the writer no longer waits for reader 1.
    for (uint64_t seq = n; seq < n + 1000; ++seq) {
      REQUIRE(send(ring, pattern(seq, size_of(seq)), clock_type::now() + 1s));
      REQUIRE(ring.read(0, out, clock_type::now() + 1s));
      REQUIRE(out == pattern(seq, size_of(seq)));
    }
    CHECK_THAT(error_of([&] { ring.read(1, out, clock_type::now() + 1s); }),
               Catch::Contains("dropped") && Catch::Contains("reader 1"));
    // The other reader goes on.
    CHECK(try_send(ring, next));
    CHECK(ring.read(0, out, clock_type::now() + 1s));
  }
}

TEST_CASE("a writer asleep for room is woken by a reader that reads, or by the reader's drop",
          "[shm]") {
  local_ring t(4096, 2);
  auto& ring = t.ring;
  std::vector<char> out;
  const std::vector<char> big = pattern(1, ring.max_message());
  while (try_send(ring, big))
    REQUIRE(ring.read(0, out, clock_type::now() + 1s));
  const bool drop = GENERATE(false, true);
  INFO((drop ? "reader 1 is dropped" : "reader 1 reads"));

  std::atomic<int> wrote{-1};
  std::thread writer([&] { wrote = send(ring, big, clock_type::now() + 10s, no_spin) ? 1 : 0; });
  const bool slept = within(5000ms, [&] { return ring.space_word().sleepers.load() == 1; });
  if (drop)
    ring.drop(1);
  else
    CHECK_NOTHROW(ring.read(1, out, clock_type::now() + 1s));
  writer.join();
  CHECK(slept);
  CHECK(wrote == 1);
  CHECK(ring.unread(0) > 0);
  CHECK(ring.read(0, out, clock_type::now() + 1s));
  CHECK(out == big);
}

TEST_CASE("a reader asleep on the ring is woken by a message, or by its drop, which it sees as an "
          "error",
          "[shm]") {
  local_ring t(4096, 2);
  auto& ring = t.ring;
  const auto msg = pattern(7, 777);

  SECTION("a message") {
    std::vector<char> out;
    std::atomic<int> got{-1};
    std::thread reader([&] { got = ring.read(1, out, clock_type::now() + 10s, no_spin) ? 1 : 0; });
    const bool slept = within(5000ms, [&] { return ring.data_word().sleepers.load() == 1; });
    const bool sent = try_send(ring, msg);
    reader.join();
    CHECK(slept);
    CHECK(sent);
    CHECK(got == 1);
    CHECK(out == msg);
  }

  SECTION("its drop") {
    std::string what = "no error";
    std::thread reader([&] {
      std::vector<char> out;
      try {
        what = ring.read(1, out, clock_type::now() + 10s, no_spin) ? "a message" : "timed out";
      } catch (const ag::error& e) {
        what = e.what();
      }
    });
    const bool slept = within(5000ms, [&] { return ring.data_word().sleepers.load() == 1; });
    ring.drop(1);
    reader.join();
    CHECK(slept);
    CHECK_THAT(what, Catch::Contains("dropped"));
  }
}

TEST_CASE("a read with nothing written ends at its deadline", "[shm]") {
  local_ring t(4096, 1);
  std::vector<char> out{'x'};
  CHECK_FALSE(t.ring.readable(0));
  CHECK_FALSE(t.ring.read(0, out, clock_type::now() + 20ms));
  CHECK_FALSE(t.ring.read(0, out, clock_type::now() + 20ms, no_spin));
  CHECK_FALSE(t.ring.read(0, out, clock_type::now() - 1s));
  CHECK(t.ring.read_messages(0) == 0);
  // And a message written later is still read.
  REQUIRE(try_send(t.ring, pattern(0, 5)));
  CHECK(t.ring.read(0, out, clock_type::now() - 1s));
  CHECK(out == pattern(0, 5));
}

TEST_CASE("format refuses a bad capacity, reader count or memory", "[shm]") {
  aligned_memory memory(broadcast_ring::bytes_for(1 << 16, 4) + 64);
  auto* p = memory.data();
  const auto bytes = memory.size();
  for (std::size_t capacity : {std::size_t{0}, std::size_t{2048}, std::size_t{4095},
                               std::size_t{6000}, std::size_t{12288}}) {
    INFO("capacity " << capacity);
    CHECK_THAT(error_of([&] { broadcast_ring::format(p, bytes, capacity, 1); }),
               Catch::Contains(std::to_string(capacity)) && Catch::Contains("power of two"));
  }
  CHECK_THAT(error_of([&] { broadcast_ring::format(p, bytes, 4096, 0); }),
             Catch::Contains("0 readers"));
  const std::size_t need = broadcast_ring::bytes_for(4096, 2);
  CHECK_THAT(error_of([&] { broadcast_ring::format(p, need - 1, 4096, 2); }),
             Catch::Contains(std::to_string(need)));
  CHECK_THAT(error_of([&] { broadcast_ring::format(p + 8, need, 4096, 2); }),
             Catch::Contains("aligned"));
  // The refusals wrote no ring.
  CHECK_THROWS_AS(broadcast_ring::attach(p, bytes), ag::error);
  CHECK(broadcast_ring::format(p, need, 4096, 2));
}

TEST_CASE("attach refuses memory that holds no ring, or too little of one", "[shm]") {
  aligned_memory memory(broadcast_ring::bytes_for(4096, 2));
  CHECK_THAT(error_of([&] { broadcast_ring::attach(memory.data(), memory.size()); }),
             Catch::Contains("not a ring"));
  CHECK_THROWS_AS(broadcast_ring::attach(memory.data(), 16), ag::error);
  std::memset(memory.data(), 0x5a, memory.size());
  CHECK_THROWS_AS(broadcast_ring::attach(memory.data(), memory.size()), ag::error);
  broadcast_ring::format(memory.data(), memory.size(), 4096, 2);
  CHECK_THAT(error_of([&] { broadcast_ring::attach(memory.data(), memory.size() - 1); }),
             Catch::Contains("does not fit"));
  CHECK(broadcast_ring::attach(memory.data(), memory.size()));
}

TEST_CASE("a message larger than the ring's largest is refused, naming its size", "[shm]") {
  local_ring t(4096, 1);
  auto& ring = t.ring;
  const std::size_t max = ring.max_message();
  const std::vector<char> too_big(max + 1, 'a');
  CHECK_THAT(error_of([&] { try_send(ring, too_big); }),
             Catch::Contains(std::to_string(max + 1)) && Catch::Contains(std::to_string(max)));
  CHECK_THAT(error_of([&] { try_send(ring, too_big, 3); }),
             Catch::Contains(std::to_string(max + 1)));
  CHECK_THAT(error_of([&] { send(ring, too_big, clock_type::now() + 1s); }),
             Catch::Contains(std::to_string(max + 1)));
  CHECK(ring.messages() == 0);
  CHECK_FALSE(ring.readable(0));
  // The largest one goes through.
  const auto largest = pattern(3, max);
  REQUIRE(try_send(ring, largest, 2));
  std::vector<char> out;
  REQUIRE(ring.read(0, out, clock_type::now() + 1s));
  CHECK(out == largest);
}

TEST_CASE("a read by a reader the ring does not have throws", "[shm]") {
  local_ring t(4096, 2);
  std::vector<char> out;
  CHECK_THAT(error_of([&] { t.ring.read(2, out, clock_type::now() + 1s); }),
             Catch::Contains("reader 2"));
  CHECK_THROWS_AS(t.ring.read(1000000, out, clock_type::now() + 1s), ag::error);
}

TEST_CASE("a malformed record is an error, not a message", "[shm]") {
  local_ring t(4096, 1);
  REQUIRE(try_send(t.ring, pattern(0, 100)));
  // The data bytes follow the header and the reader slots (bytes_for: capacity bytes at the end).
  std::byte* data = t.memory.data() + t.memory.size() - t.ring.capacity();
  const uint32_t wrong = 5000;
  std::memcpy(data, &wrong, sizeof wrong);
  std::vector<char> out;
  CHECK_THAT(error_of([&] { t.ring.read(0, out, clock_type::now() + 1s); }),
             Catch::Contains("malformed"));
}

// -- futex_wait -----------------------------------------------------------------------------------

TEST_CASE("a waiter asleep on a wake word wakes on notify_all, not on its slice", "[shm]") {
  ag::wake_word w;
  std::atomic<bool> flag{false};
  std::atomic<int> result{-1};
  // A slice longer than the deadline: only the notify can end the wait with true.
  std::thread waiter([&] {
    result = ag::wait_until(
               w, [&] { return flag.load(std::memory_order_acquire); }, clock_type::now() + 10s,
               no_spin, 60s)
               ? 1
               : 0;
  });
  const bool slept = within(5000ms, [&] { return w.sleepers.load() == 1; });
  flag.store(true, std::memory_order_release);
  ag::notify_all(w);
  waiter.join();
  CHECK(slept);
  CHECK(result == 1);
  CHECK(w.sleepers.load() == 0);
  CHECK(w.changes.load() == 1);
}

TEST_CASE("wait_until returns at once when done, and false at its deadline when not", "[shm]") {
  ag::wake_word w;
  int calls = 0;
  CHECK(ag::wait_until(w, [&] { return ++calls > 0; }, clock_type::now() - 1s));
  CHECK(calls == 1);
  CHECK_FALSE(ag::wait_until(w, [] { return false; }, clock_type::now() + 20ms));
  CHECK_FALSE(ag::wait_until(w, [] { return false; }, clock_type::now() + 20ms, no_spin, 60s));
  CHECK_FALSE(ag::wait_until(w, [] { return false; }, clock_type::now() - 1s));
  CHECK(w.sleepers.load() == 0);
}

// -- completion_board -----------------------------------------------------------------------------

TEST_CASE("wait_op is done once the lane's count reaches the operator, timed out before", "[shm]") {
  local_board lb(3);
  auto& board = lb.board();
  CHECK(board.lanes() == 3);
  const uint64_t f = board.faults();
  CHECK(board.wait_op(0, 0, f, clock_type::now() + 1s, {}) == outcome::done);
  CHECK(board.wait_op(0, 1, f, clock_type::now() + 20ms, {}) == outcome::timed_out);
  CHECK(board.wait_op(0, 1, f, clock_type::now() + 20ms, no_spin) == outcome::timed_out);
  board.completed(0, 5, 12);
  board.notify();
  CHECK(board.ops(0) == 5);
  CHECK(board.entries(0) == 12);
  CHECK(board.ops(1) == 0);
  CHECK(board.wait_op(0, 5, f, clock_type::now() + 1s, {}) == outcome::done);
  CHECK(board.wait_op(0, 3, f, clock_type::now() + 1s, no_spin) == outcome::done);
  CHECK(board.wait_op(0, 6, f, clock_type::now() + 20ms, {}) == outcome::timed_out);
  // Another lane's count is not this lane's.
  CHECK(board.wait_op(1, 5, f, clock_type::now() + 20ms, {}) == outcome::timed_out);
  CHECK_FALSE(board.lane_failed(0));
}

TEST_CASE("a failed lane is stale however far its count got", "[shm]") {
  local_board lb(2);
  auto& board = lb.board();
  const uint64_t f = board.faults();
  board.completed(1, 10, 20);
  board.failed(1, 3);
  CHECK(board.lane_failed(1));
  CHECK(board.failed_at(1) == 4);
  CHECK_FALSE(board.lane_failed(0));
  CHECK(board.wait_op(1, 5, f, clock_type::now() + 1s, {}) == outcome::stale);
  CHECK(board.wait_op(1, 10, f, clock_type::now() + 1s, no_spin) == outcome::stale);
  CHECK(board.wait_op(1, 11, f, clock_type::now() + 1s, {}) == outcome::stale);
  CHECK(board.wait_entries({0, 20}, f, clock_type::now() + 1s, {}) == outcome::stale);
  // The first failure stays the one reported.
  board.failed(1, 7);
  CHECK(board.failed_at(1) == 4);
  // The healthy lane is unaffected.
  board.completed(0, 1, 1);
  CHECK(board.wait_op(0, 1, f, clock_type::now() + 1s, {}) == outcome::done);
}

TEST_CASE("a fault after the count was taken makes every wait stale", "[shm]") {
  local_board lb(2);
  auto& board = lb.board();
  board.completed(0, 4, 4);
  const uint64_t f = board.faults();
  board.fault();
  CHECK(board.faults() == f + 1);
  CHECK(board.wait_op(0, 4, f, clock_type::now() + 1s, {}) == outcome::stale);
  CHECK(board.wait_op(0, 9, f, clock_type::now() + 1s, no_spin) == outcome::stale);
  CHECK(board.wait_entries({4}, f, clock_type::now() + 1s, {}) == outcome::stale);
  // A count taken after the fault is good again.
  CHECK(board.wait_op(0, 4, board.faults(), clock_type::now() + 1s, {}) == outcome::done);
}

TEST_CASE("wait_entries is done only once every lane reached its entries", "[shm]") {
  local_board lb(4);
  auto& board = lb.board();
  const uint64_t f = board.faults();
  const std::vector<uint64_t> target = {3, 0, 7, 2};
  CHECK(board.wait_entries(target, f, clock_type::now() + 20ms, {}) == outcome::timed_out);
  board.completed(0, 1, 3);
  board.completed(2, 2, 7);
  board.notify();
  CHECK(board.wait_entries(target, f, clock_type::now() + 20ms, no_spin) == outcome::timed_out);
  board.completed(3, 1, 1);
  CHECK(board.wait_entries(target, f, clock_type::now() + 20ms, {}) == outcome::timed_out);
  board.completed(3, 2, 2);
  board.notify();
  CHECK(board.wait_entries(target, f, clock_type::now() + 1s, {}) == outcome::done);
  CHECK(board.wait_entries({3, 0}, f, clock_type::now() + 1s, no_spin) == outcome::done);
  CHECK(board.wait_entries({}, f, clock_type::now() + 1s, {}) == outcome::done);
  // The lane that was not waited for failing still counts: a failure anywhere is stale.
  board.failed(1, 0);
  CHECK(board.wait_entries(target, f, clock_type::now() + 1s, {}) == outcome::stale);
}

TEST_CASE("a waiter asleep on the board is woken by completed and notify before its deadline",
          "[shm]") {
  local_board lb(2);
  auto& board = lb.board();
  const uint64_t f = board.faults();
  const int how = GENERATE(0, 1, 2);
  INFO((how == 0 ? "completed" : how == 1 ? "failed" : "fault"));
  std::atomic<int> result{-1};
  std::thread waiter([&] {
    result = static_cast<int>(board.wait_op(1, 3, f, clock_type::now() + 10s, no_spin));
  });
  std::this_thread::sleep_for(20ms); // most likely asleep by now; either way it must see the change
  if (how == 0) {
    board.completed(1, 3, 3);
    board.notify();
  } else if (how == 1) {
    board.failed(1, 2);
  } else {
    board.fault();
  }
  waiter.join();
  CHECK(result == static_cast<int>(how == 0 ? outcome::done : outcome::stale));
}

TEST_CASE("a board is found by attach, and bad memory or lanes are refused", "[shm]") {
  aligned_memory memory(completion_board::bytes_for(3) + 64);
  CHECK_THAT(error_of([&] { completion_board::attach(memory.data(), memory.size()); }),
             Catch::Contains("not a board"));
  CHECK_THROWS_AS(completion_board::attach(memory.data(), 8), ag::error);
  CHECK_THAT(error_of([&] { completion_board::format(memory.data(), memory.size(), 0); }),
             Catch::Contains("0 lanes"));
  CHECK_THROWS_AS(completion_board::format(memory.data(), completion_board::bytes_for(3) - 1, 3),
                  ag::error);
  CHECK_THROWS_AS(completion_board::format(memory.data() + 8, memory.size() - 8, 3), ag::error);
  // A ring is not a board.
  aligned_memory ring_memory(broadcast_ring::bytes_for(4096, 1));
  broadcast_ring::format(ring_memory.data(), ring_memory.size(), 4096, 1);
  CHECK_THROWS_AS(completion_board::attach(ring_memory.data(), ring_memory.size()), ag::error);

  auto board = completion_board::format(memory.data(), completion_board::bytes_for(3), 3);
  board.completed(2, 6, 9);
  auto other = completion_board::attach(memory.data(), completion_board::bytes_for(3));
  CHECK(other.lanes() == 3);
  CHECK(other.ops(2) == 6);
  CHECK(other.entries(2) == 9);
  CHECK_THAT(error_of([&] { completion_board::attach(memory.data(), completion_board::bytes_for(2)); }),
             Catch::Contains("do not fit"));
}

TEST_CASE("a lane's running mark, heartbeat, seats and the spin census lie where docs/PROTOCOL.md says",
          "[shm]") {
  aligned_memory memory(completion_board::bytes_for(3));
  auto board = completion_board::format(memory.data(), memory.size(), 3);
  CHECK(board.running_at(1) == 0);
  CHECK(board.beats(1) == 0);
  board.running(1, 7);
  board.beat(1);
  board.beat(1);
  board.beat(2);
  auto other = completion_board::attach(memory.data(), memory.size()); // the controller's view
  CHECK(other.running_at(1) == 7);
  CHECK(other.beats(1) == 2);
  CHECK(other.running_at(0) == 0);
  CHECK(other.running_at(2) == 0);
  CHECK(other.beats(2) == 1);
  CHECK(other.running_at(3) == 0); // no such lane
  board.running(1, 0);
  CHECK(other.running_at(1) == 0);
  // Lane 1's slot at 320 + 64: running at 24 within it, the beat at 32, its seats at 40; the
  // version at 4; the census's spinning count at 256 and its CPUs at 260.
  auto word = [&](std::size_t at) {
    uint64_t v = 0;
    std::memcpy(&v, memory.data() + at, sizeof v);
    return v;
  };
  board.running(1, 9);
  CHECK(word(320 + 64 + 24) == 9);
  CHECK(word(320 + 64 + 32) == 2);
  board.count_cpus(4);
  {
    ag::spin_seat seat{board.seat(1)};
    REQUIRE(seat);
    CHECK(word(320 + 64 + 40) == 1);
    CHECK(word(256) == (uint64_t{4} << 32 | 1));
  }
  CHECK(word(320 + 64 + 40) == 0);
  CHECK(word(256) == uint64_t{4} << 32);
  uint32_t version = 0;
  std::memcpy(&version, memory.data() + 4, sizeof version);
  CHECK(version == 4);
  // The stopped flag at 12.
  CHECK(word(8) >> 32 == 0);
  board.stop();
  CHECK(word(8) >> 32 == 1);
  CHECK(other.stopped());
  // A board of a layout before (version 3, no spin census) is refused.
  version = 3;
  std::memcpy(memory.data() + 4, &version, sizeof version);
  CHECK_THAT(error_of([&] { completion_board::attach(memory.data(), memory.size()); }),
             Catch::Contains("not a board of version 4"));
}

// -- shm_channel, across processes ----------------------------------------------------------------

TEST_CASE("a channel's ring carries 20000 messages to two child processes whole and in order",
          "[shm]") {
  spin_policy spin;
  SECTION("spinning first") {}
  SECTION("sleeping at once") { spin = no_spin; }

  const auto name = unique_name();
  {
    auto channel = shm_channel::create(name, 2, 2, 16384);
    const std::size_t bytes = channel.size();
    CHECK(bytes == shm_channel::bytes_for(2, 2, 16384));
    const std::size_t max = channel.ring().max_message();
    constexpr uint64_t count = 20000;
    // Many small messages, some empty, and many up to the largest.
    auto length = [max](uint64_t seq) -> std::size_t {
      const uint64_t h = seq * 2654435761u;
      return seq % 4 == 0 ? h % 17 : seq % 97 == 1 ? max : h % (max + 1);
    };

    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    auto read_all = [&](uint32_t r) {
      ::close(pipe_fds[0]);
      auto mine = shm_channel::open(name, bytes);
      std::vector<char> out;
      for (uint64_t seq = 0; seq < count; ++seq) {
        if (!mine.ring().read(r, out, clock_type::now() + 5s, spin)) {
          report(pipe_fds[1], "reader " + std::to_string(r) + ": nothing came for message "
                                + std::to_string(seq) + " within 5 s");
          return 2;
        }
        if (out != pattern(seq, length(seq))) {
          report(pipe_fds[1], "reader " + std::to_string(r) + ": message " + std::to_string(seq)
                                + " has " + std::to_string(out.size()) + " bytes, expected "
                                + std::to_string(length(seq)) + ", or other bytes");
          return 3;
        }
      }
      if (mine.ring().read_messages(r) != count || mine.ring().readable(r)) {
        report(pipe_fds[1], "reader " + std::to_string(r) + ": counts do not add up");
        return 4;
      }
      return 0;
    };
    child_process first([&] { return read_all(0); });
    child_process second([&] { return read_all(1); });
    ::close(pipe_fds[1]);

    // Each write waits 5 s at most, and the whole transfer a minute: a bound that ends the test
    // should wake-ups be lost (the 100 ms slices of every wait would otherwise drag it on for
    // hours), not a measure of speed.
    const auto give_up = clock_type::now() + 60s;
    for (uint64_t seq = 0; seq < count; ++seq) {
      INFO("message " << seq);
      REQUIRE(send(channel.ring(), pattern(seq, length(seq)),
                   std::min(clock_type::now() + 5s, give_up), spin));
    }
    const auto deadline = clock_type::now() + 10s;
    const auto first_status = first.wait(deadline);
    const auto second_status = second.wait(deadline);
    const std::string text = read_until_closed(pipe_fds[0], clock_type::now() + 1s);
    ::close(pipe_fds[0]);
    INFO("reader 0 " << describe(first_status) << ", reader 1 " << describe(second_status) << "; "
                     << text);
    CHECK(exited_zero(first_status));
    CHECK(exited_zero(second_status));
    CHECK(channel.ring().messages() == count);
    CHECK(channel.ring().read_messages(0) == count);
    CHECK(channel.ring().read_messages(1) == count);
    CHECK(exists_in_dev_shm(name));
  }
  CHECK_FALSE(exists_in_dev_shm(name));
}

TEST_CASE("a child process answers the board's lane 0 on lane 1, 500 times, then sees a fault",
          "[shm]") {
  spin_policy spin;
  SECTION("spinning first") {}
  SECTION("sleeping at once") { spin = no_spin; }

  const auto name = unique_name();
  {
    auto channel = shm_channel::create(name, 2, 1, 4096);
    auto& board = channel.board();
    const std::size_t bytes = channel.size();
    constexpr uint64_t rounds = 500;
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    child_process child([&] {
      ::close(pipe_fds[0]);
      auto mine = shm_channel::open(name, bytes);
      auto& b = mine.board();
      const uint64_t f = b.faults();
      for (uint64_t i = 1; i <= rounds; ++i) {
        const auto got = b.wait_op(0, i, f, clock_type::now() + 5s, spin);
        if (got != outcome::done) {
          report(pipe_fds[1], "round " + std::to_string(i) + ": outcome "
                                + std::to_string(static_cast<int>(got)));
          return 2;
        }
        if (b.entries(0) != 2 * i) {
          report(pipe_fds[1], "round " + std::to_string(i) + ": entries "
                                + std::to_string(b.entries(0)));
          return 3;
        }
        b.completed(1, i, 3 * i);
        b.notify();
      }
      // The parent faults instead of completing the next round.
      const auto last = b.wait_op(0, rounds + 1, f, clock_type::now() + 5s, spin);
      if (last != outcome::stale) {
        report(pipe_fds[1], "after the fault: outcome " + std::to_string(static_cast<int>(last)));
        return 4;
      }
      return 0;
    });
    ::close(pipe_fds[1]);

    const uint64_t f = board.faults();
    // 5 s a round at most, and half a minute in all: a bound for lost wake-ups, not of speed.
    const auto give_up = clock_type::now() + 30s;
    for (uint64_t i = 1; i <= rounds; ++i) {
      board.completed(0, i, 2 * i);
      board.notify();
      const auto got = board.wait_op(1, i, f, std::min(clock_type::now() + 5s, give_up), spin);
      INFO("round " << i);
      REQUIRE(got == outcome::done);
      REQUIRE(board.entries(1) == 3 * i);
    }
    board.fault();
    const auto status = child.wait(clock_type::now() + 10s);
    const std::string text = read_until_closed(pipe_fds[0], clock_type::now() + 1s);
    ::close(pipe_fds[0]);
    INFO("the child " << describe(status) << "; " << text);
    CHECK(exited_zero(status));
  }
  CHECK_FALSE(exists_in_dev_shm(name));
}

// -- shm_channel ----------------------------------------------------------------------------------

TEST_CASE("a channel is opened only by its name and exact size, and goes with its creator",
          "[shm]") {
  const auto name = unique_name();
  {
    auto channel = shm_channel::create(name, 3, 2, 8192);
    CHECK(channel.name() == name);
    CHECK(exists_in_dev_shm(name));
    CHECK(channel.board().lanes() == 3);
    CHECK(channel.ring().readers() == 2);
    CHECK(channel.ring().capacity() == 8192);
    const std::size_t bytes = channel.size();
    CHECK(bytes == shm_channel::bytes_for(3, 2, 8192));

    CHECK_THAT(error_of([&] { shm_channel::open(name, bytes + 64); }), Catch::Contains(name));
    CHECK_THROWS_AS(shm_channel::open(name, bytes - 1), ag::error);
    CHECK_THROWS_AS(shm_channel::open(name, 0), ag::error);
    CHECK_THAT(error_of([&] { shm_channel::open(name + "-missing", bytes); }),
               Catch::Contains(name + "-missing"));
    CHECK_THROWS_AS(shm_channel::create(name, 3, 2, 8192), ag::error);

    {
      auto opened = shm_channel::open(name, bytes);
      CHECK(opened.board().lanes() == 3);
      CHECK(opened.ring().capacity() == 8192);
      channel.board().completed(2, 4, 5);
      CHECK(opened.board().ops(2) == 4);
      REQUIRE(try_send(channel.ring(), pattern(1, 100)));
      std::vector<char> out;
      REQUIRE(opened.ring().read(1, out, clock_type::now() + 1s));
      CHECK(out == pattern(1, 100));
    }
    // An opener's going leaves the object.
    CHECK(exists_in_dev_shm(name));
  }
  CHECK_FALSE(exists_in_dev_shm(name));
  CHECK_THROWS_AS(shm_channel::open(name, shm_channel::bytes_for(3, 2, 8192)), ag::error);
}

TEST_CASE("a shared-memory object that holds no channel is refused by open", "[shm]") {
  const auto name = unique_name();
  const std::size_t bytes = shm_channel::bytes_for(2, 1, 4096);
  {
    auto store = ag::tensor_store::create_shared(name, bytes);
    CHECK_THAT(error_of([&] { shm_channel::open(name, bytes); }), Catch::Contains("not a board"));
    // A board with no ring after it.
    completion_board::format(store.base(), bytes, 2);
    CHECK_THROWS_AS(shm_channel::open(name, bytes), ag::error);
  }
  CHECK_FALSE(exists_in_dev_shm(name));
}

TEST_CASE("a channel whose ring cannot be laid out is not left in /dev/shm", "[shm]") {
  const auto name = unique_name();
  CHECK_THROWS_AS(shm_channel::create(name, 2, 1, 5000), ag::error);
  CHECK_FALSE(exists_in_dev_shm(name));
  CHECK_THROWS_AS(shm_channel::create(name, 0, 1, 4096), ag::error);
  CHECK_FALSE(exists_in_dev_shm(name));
}
