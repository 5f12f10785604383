// Tests of how waits decide to spin: the CPUs a process may use (ipc/cpu_budget: affinity and
// cgroup quotas, parsed from the kernel's own texts), the census that keeps a CPU free for the
// thread a waiter waits for (ipc/spin_census, in a real completion board, with a forked child
// killed while it holds a seat), and the learner that shortens spins that rarely pay
// (ipc/spin_learner, and through wait_until and spin_until with real threads), and naps between
// looks (nap_until).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc/completion_board.hpp"
#include "ipc/cpu_budget.hpp"
#include "ipc/futex_wait.hpp"

using ag::completion_board;
using ag::local_board;
using ag::spin_learner;
using ag::spin_policy;
using ag::spin_seat;
using namespace std::chrono_literals;
namespace cb = ag::cpu_budget;

namespace {

// Sets `flag` after `delay` on a thread of its own and wakes the waiters of `w`.
std::thread set_after(std::atomic<int>& flag, ag::wake_word& w, std::chrono::milliseconds delay) {
  return std::thread{[&flag, &w, delay] {
    std::this_thread::sleep_for(delay);
    flag.store(1, std::memory_order_release);
    ag::notify_all(w);
  }};
}

} // namespace

// -- cpu_budget -----------------------------------------------------------------------------------

TEST_CASE("cgroup v2 cpu.max and v1 quotas give the CPUs they allow", "[spin]") {
  CHECK(cb::parse_cpu_max("200000 100000\n") == Approx(2.0));
  CHECK(cb::parse_cpu_max("150000 100000") == Approx(1.5));
  CHECK_FALSE(cb::parse_cpu_max("max 100000\n"));
  CHECK_FALSE(cb::parse_cpu_max(""));
  CHECK_FALSE(cb::parse_cpu_max("garbage"));
  CHECK_FALSE(cb::parse_cpu_max("100000 0"));
  CHECK(cb::quota_cpus(50000, 100000) == Approx(0.5));
  CHECK_FALSE(cb::quota_cpus(-1, 100000));
}

TEST_CASE("the group of /proc/self/cgroup is found for v2 and for a v1 controller", "[spin]") {
  const char* v2 = "0::/user.slice/job-7\n";
  CHECK(cb::group_of(v2, "") == std::optional<std::string>{"/user.slice/job-7"});
  CHECK_FALSE(cb::group_of(v2, "cpu"));
  const char* v1 = "12:memory:/m\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/\n0::/\n";
  CHECK(cb::group_of(v1, "cpu") == std::optional<std::string>{"/docker/abc"});
  CHECK(cb::group_of(v1, "cpuacct") == std::optional<std::string>{"/docker/abc"});
  CHECK(cb::group_of(v1, "") == std::optional<std::string>{"/"});
  CHECK_FALSE(cb::group_of("4:cpuset:/x\n", "cpu"));
  CHECK_FALSE(cb::group_of("not a cgroup line", ""));
}

TEST_CASE("the usable CPUs are the fewer of affinity and quota, rounded up, at least one",
          "[spin]") {
  CHECK(cb::combine(16, std::nullopt) == 16);
  CHECK(cb::combine(16, 2.0) == 2);
  CHECK(cb::combine(16, 1.5) == 2);
  CHECK(cb::combine(2, 8.0) == 2);
  CHECK(cb::combine(4, 0.2) == 1);
  CHECK(cb::combine(0, std::nullopt) == 1);
}

TEST_CASE("usable_cpus follows the affinity mask this thread runs under", "[spin]") {
  cpu_set_t before;
  REQUIRE(::sched_getaffinity(0, sizeof before, &before) == 0);
  const unsigned all = ag::usable_cpus();
  CHECK(all >= 1);
  CHECK(all <= static_cast<unsigned>(CPU_COUNT(&before)));
  int first = 0;
  while (!CPU_ISSET(first, &before))
    ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);
  CHECK(ag::usable_cpus() == 1);
  REQUIRE(::sched_setaffinity(0, sizeof before, &before) == 0);
  CHECK(ag::usable_cpus() == all);
}

// -- spin_census ----------------------------------------------------------------------------------

TEST_CASE("the census seats at most cpus - 1 spinners and none on one CPU", "[spin]") {
  local_board lb{3};
  auto& board = lb.board();
  SECTION("not counted: every seat is taken") {
    spin_seat a{board.seat()}, b{board.seat(1)}, c{board.seat(2)};
    CHECK((a && b && c));
    CHECK(board.spinning() == 0);
  }
  SECTION("two CPUs: one spinner") {
    board.count_cpus(2);
    {
      spin_seat a{board.seat()};
      CHECK(a);
      spin_seat b{board.seat(1)};
      CHECK_FALSE(b);
      CHECK(board.spinning() == 1);
    }
    CHECK(board.spinning() == 0);
    spin_seat c{board.seat(1)};
    CHECK(c);
  }
  SECTION("three CPUs: two spinners, a seat given back is taken again") {
    board.count_cpus(3);
    std::optional<spin_seat> a{std::in_place, board.seat(1)};
    spin_seat b{board.seat(2)};
    CHECK((*a && b));
    CHECK_FALSE(spin_seat{board.seat()});
    a.reset();
    CHECK(spin_seat{board.seat()});
  }
  SECTION("one CPU: nobody spins") {
    board.count_cpus(1);
    CHECK_FALSE(spin_seat{board.seat()});
    CHECK_FALSE(spin_seat{board.seat(1)});
    CHECK(board.spinning() == 0);
  }
}

TEST_CASE("a child killed while it holds a seat leaves it until the controller forgets its lane",
          "[spin][process]") {
  const std::size_t bytes = completion_board::bytes_for(2);
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(memory != MAP_FAILED);
  auto board = completion_board::format(memory, bytes, 2);
  board.count_cpus(2);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto mine = completion_board::attach(memory, bytes);
    spin_seat seat{mine.seat(1)};
    if (!seat)
      ::_exit(3);
    for (;;)
      ::pause(); // killed holding it
  }
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (board.spinning() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  REQUIRE(board.spinning() == 1);
  ::kill(child, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(board.spinning() == 1);
  CHECK_FALSE(spin_seat{board.seat()}); // two CPUs, the dead child's seat still taken
  board.forget_seats(1);
  CHECK(board.spinning() == 0);
  CHECK(spin_seat{board.seat()});
  board.forget_seats(1); // nothing more to give back
  CHECK(board.spinning() == 0);
  ::munmap(memory, bytes);
}

// -- spin_learner ---------------------------------------------------------------------------------

TEST_CASE("a learner keeps the bound while waits end within it", "[spin]") {
  spin_learner l;
  CHECK(l.allowance(50us) == 50us);
  l.caught(3us);
  l.slept(30us, 50us);
  CHECK(l.allowance(50us) == 50us);
  CHECK(l.allowance(20us) == 20us); // never past the bound it is given
}

TEST_CASE("a learner halves its spin after long waits and sleeps at once below a microsecond",
          "[spin]") {
  spin_learner l;
  l.slept(200us, 50us);
  CHECK(l.allowance(50us) == 25us);
  l.missed(50us);
  CHECK(l.allowance(50us) == 12500ns);
  for (int i = 0; i < 6; ++i)
    l.slept(1ms, 50us);
  CHECK(l.current() < spin_learner::least);
  int probes = 0;
  for (uint32_t i = 0; i < 4 * spin_learner::probe_every; ++i) {
    const auto a = l.allowance(50us);
    CHECK((a == 0ns || a == 50us));
    probes += a == 50us;
  }
  CHECK(probes == 4); // one wait in probe_every tries the whole bound
}

TEST_CASE("a learner spins again once waits are short again", "[spin]") {
  spin_learner l;
  for (int i = 0; i < 10; ++i)
    l.slept(1ms, 50us);
  REQUIRE(l.current() < spin_learner::least);
  l.slept(8us, 50us); // ended soon after it slept: a spin would have caught it
  CHECK(l.allowance(50us) == 10us);
  l.slept(8us, 50us);
  CHECK(l.allowance(50us) == 20us); // doubles while such waits go on
  l.caught(15us);
  CHECK(l.allowance(50us) == 30us);
}

TEST_CASE("a probe that catches its wait keeps the waiter spinning, and a wait with no spin "
          "teaches nothing",
          "[spin]") {
  spin_learner l;
  for (int i = 0; i < 10; ++i)
    l.missed(50us);
  REQUIRE(l.current() < spin_learner::least);
  l.caught(100ns); // a probe caught its wait at once
  CHECK(l.allowance(50us) >= spin_learner::least);
  spin_learner untouched;
  ag::wake_word w;
  CHECK_FALSE(ag::wait_until(w, [] { return false; }, std::chrono::steady_clock::now() + 2ms,
                             spin_policy{0ns, {}, &untouched}));
  CHECK(untouched.current() < 0ns); // still the bound: it never spun
}

TEST_CASE("wait_until teaches its learner, and spin_until counts an empty spin as a miss", "[spin]") {
  ag::wake_word w;
  std::atomic<int> flag{0};
  spin_learner l;
  const spin_policy learning{50us, {}, &l};
  // Waits that end long after the bound: the spin shrinks to nothing.
  for (int i = 0; i < 8; ++i) {
    flag = 0;
    auto writer = set_after(flag, w, 3ms);
    CHECK(ag::wait_until(
      w, [&] { return flag.load(std::memory_order_acquire) != 0; },
      std::chrono::steady_clock::now() + 10s, learning));
    writer.join();
  }
  CHECK(l.current() < spin_learner::least);
  // A wait past its deadline counts as long too.
  spin_learner timed;
  CHECK_FALSE(ag::wait_until(w, [] { return false; }, std::chrono::steady_clock::now() + 5ms,
                             spin_policy{50us, {}, &timed}));
  CHECK(timed.current() == 25us);
  // A spin that finds nothing halves; one that finds what it waits for leaves it.
  spin_learner lingering;
  CHECK_FALSE(ag::spin_until([] { return false; }, spin_policy{40us, {}, &lingering}));
  CHECK(lingering.current() == 20us);
  CHECK(ag::spin_until([] { return true; }, spin_policy{40us, {}, &lingering}));
  CHECK(lingering.current() == 20us);
}

TEST_CASE("a wait denied a seat sleeps at once and still wakes when done", "[spin]") {
  local_board lb{2};
  auto& board = lb.board();
  ag::wake_word w;
  // How often a wait of 5 ms with a 10 ms spin looks: thousands of times spinning, a handful
  // asleep (once per wake-up or 100 ms slice).
  auto looks = [&](ag::spin_seat_ref seat) {
    std::atomic<int> flag{0};
    int calls = 0;
    auto writer = set_after(flag, w, 5ms);
    const bool done = ag::wait_until(
      w,
      [&] {
        ++calls;
        return flag.load(std::memory_order_acquire) != 0;
      },
      std::chrono::steady_clock::now() + 10s, spin_policy{10ms, seat});
    writer.join();
    CHECK(done);
    return calls;
  };
  CHECK(looks(board.seat(1)) > 100); // no CPUs counted: it spins
  board.count_cpus(1);
  CHECK(looks(board.seat(1)) < 20); // one CPU: it sleeps at once
  CHECK(board.spinning() == 0);
  CHECK_FALSE(ag::spin_until([] { return false; }, spin_policy{10ms, board.seat()}));
}

// -- nap_until ------------------------------------------------------------------------------------

TEST_CASE("nap_until looks between naps until done or its bound, under a seat of the census",
          "[spin]") {
  local_board lb{2};
  auto& board = lb.board();
  ag::nap_precisely();
  SECTION("done within the bound, by another thread") {
    std::atomic<int> flag{0};
    ag::wake_word w;
    int looks = 0;
    auto writer = set_after(flag, w, 5ms);
    CHECK(ag::nap_until(
      [&] {
        ++looks;
        return flag.load(std::memory_order_acquire) != 0;
      },
      board.seat(), 10s, 100us));
    writer.join();
    CHECK(looks > 2);     // it looked between naps
    CHECK(looks < 5000);  // and napped between looks: a spin looks millions of times in 5 ms
    CHECK(board.spinning() == 0);
  }
  SECTION("not done: false once the bound passed") {
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(ag::nap_until([] { return false; }, board.seat(), 3ms, 100us));
    CHECK(std::chrono::steady_clock::now() - start >= 3ms);
  }
  SECTION("no seat (one CPU) or no bound: false at once, without a nap") {
    board.count_cpus(1);
    int looks = 0;
    CHECK_FALSE(ag::nap_until([&] { return ++looks > 1000; }, board.seat(), 10s, 100us));
    CHECK(looks == 1);
    CHECK_FALSE(ag::nap_until([] { return false; }, {}, 0ns, 100us));
    CHECK(ag::nap_until([] { return true; }, board.seat(), 0ns, 100us)); // done: true at once
  }
}
