// Tests of ipc/sub_process_sync, both sides in one process over a real shared-memory segment: the
// start-up arguments, the started handshake and the exit flag pass between creator and opener,
// every wait ends at its deadline, and the segment (mode 0600) goes with its creator.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/sub_process_sync.hpp"
#include "ipc/tensor_store.hpp"

using ag::sub_process_sync;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

// A segment name no other test run uses.
std::string unique_name() {
  static std::atomic<int> counter{0};
  return "ag-test-" + std::to_string(::getpid()) + "-sync-" + std::to_string(++counter);
}

std::string shm_path(const std::string& name) { return "/dev/shm/" + name; }

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<char> some_args() {
  std::vector<char> args;
  for (int i = 0; i < 300; ++i)
    args.push_back(static_cast<char>(i * 7));
  return args;
}

bool always() { return true; }

} // namespace

TEST_CASE("an opener reads the arguments the creator wrote", "[ipc]") {
  const auto name = unique_name();
  const auto args = some_args();
  auto creator = sub_process_sync::create(name, args);
  auto opener = sub_process_sync::open(name);
  CHECK(creator.name() == name);
  CHECK(opener.name() == name);
  CHECK(opener.args() == args);
  CHECK(creator.args() == args);
}

TEST_CASE("empty arguments and arguments of the largest size round trip", "[ipc]") {
  SECTION("empty") {
    const auto name = unique_name();
    auto creator = sub_process_sync::create(name, {});
    CHECK(sub_process_sync::open(name).args().empty());
  }
  SECTION("max_args_bytes") {
    const auto name = unique_name();
    std::vector<char> args(sub_process_sync::max_args_bytes);
    for (std::size_t i = 0; i < args.size(); ++i)
      args[i] = static_cast<char>(i % 251);
    auto creator = sub_process_sync::create(name, args);
    CHECK(sub_process_sync::open(name).args() == args);
  }
}

TEST_CASE("arguments larger than max_args_bytes are an error and leave no segment", "[ipc]") {
  const auto name = unique_name();
  const std::vector<char> args(sub_process_sync::max_args_bytes + 1, 'a');
  CHECK_THROWS_WITH(sub_process_sync::create(name, args),
                    Catch::Contains(name) && Catch::Contains("exceed"));
  CHECK_FALSE(exists(shm_path(name)));
}

TEST_CASE("notify_started makes wait_started return true", "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  auto opener = sub_process_sync::open(name);
  opener.notify_started();
  const auto start = clock_type::now();
  CHECK(creator.wait_started(clock_type::now() + 5s, always));
  CHECK(clock_type::now() - start < 2s);
  // Started stays started.
  CHECK(creator.wait_started(clock_type::now(), always));
}

TEST_CASE("wait_started wakes when another thread notifies", "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  auto opener = sub_process_sync::open(name);
  std::thread child{[&] {
    std::this_thread::sleep_for(100ms);
    opener.notify_started();
  }};
  const bool started = creator.wait_started(clock_type::now() + 10s, always);
  child.join();
  CHECK(started);
}

TEST_CASE("wait_started returns false at the deadline when nothing started", "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  const auto start = clock_type::now();
  CHECK_FALSE(creator.wait_started(start + 200ms, always));
  const auto took = clock_type::now() - start;
  CHECK(took >= 200ms);
  CHECK(took < 5s);
}

TEST_CASE("wait_started returns false soon after the child is no longer alive", "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  int asked = 0;
  const auto start = clock_type::now();
  CHECK_FALSE(creator.wait_started(start + 60s, [&] { return ++asked < 3; }));
  CHECK(asked == 3);
  CHECK(clock_type::now() - start < 5s);
}

TEST_CASE("a start-up error reported by the child is what the controller reads", "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  auto opener = sub_process_sync::open(name);
  CHECK(creator.child_error().empty());
  opener.report_error("cuda:3: no such device");
  CHECK(creator.child_error() == "cuda:3: no such device");
}

TEST_CASE("a very long start-up error is truncated, not overflowed", "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  auto opener = sub_process_sync::open(name);
  const std::string what(100'000, 'e');
  opener.report_error(what);
  const auto got = creator.child_error();
  CHECK_FALSE(got.empty());
  CHECK(got.size() < what.size());
  CHECK(what.compare(0, got.size(), got) == 0);
  // The arguments after the error field are untouched.
  CHECK(opener.args() == some_args());
}

TEST_CASE("wait_for_exit is false until notify_exit, then true", "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  auto opener = sub_process_sync::open(name);
  const auto start = clock_type::now();
  CHECK_FALSE(opener.wait_for_exit(100ms));
  const auto took = clock_type::now() - start;
  CHECK(took >= 50ms);
  CHECK(took < 5s);
  creator.notify_exit();
  CHECK(opener.wait_for_exit(0ms));
  CHECK(opener.wait_for_exit(100ms));
}

TEST_CASE("wait_for_exit wakes when another thread notifies", "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  auto opener = sub_process_sync::open(name);
  std::thread controller{[&] {
    std::this_thread::sleep_for(100ms);
    creator.notify_exit();
  }};
  bool exited = false;
  const auto deadline = clock_type::now() + 10s;
  while (!exited && clock_type::now() < deadline)
    exited = opener.wait_for_exit(1s);
  controller.join();
  CHECK(exited);
}

TEST_CASE("creating a segment whose name exists is an error that leaves the first intact",
          "[ipc]") {
  const auto name = unique_name();
  auto first = sub_process_sync::create(name, some_args());
  CHECK_THROWS_WITH(sub_process_sync::create(name, {'x'}),
                    Catch::Contains(name) && Catch::Contains("cannot create"));
  CHECK(exists(shm_path(name)));
  CHECK(sub_process_sync::open(name).args() == some_args());
}

TEST_CASE("opening a missing segment is an error naming it", "[ipc]") {
  const auto name = unique_name();
  CHECK_THROWS_WITH(sub_process_sync::open(name),
                    Catch::Contains(name) && Catch::Contains("cannot open"));
  CHECK_FALSE(exists(shm_path(name)));
}

TEST_CASE("opening a shared-memory object of another size is an error naming it", "[ipc]") {
  const auto name = unique_name();
  auto other = ag::tensor_store::create_shared("/" + name, 4096);
  CHECK_THROWS_WITH(sub_process_sync::open(name),
                    Catch::Contains(name) && Catch::Contains("not a segment of this version"));
}

TEST_CASE("opening a shared-memory object of the right size but no magic is an error", "[ipc]") {
  struct stat st {};
  {
    const auto real = unique_name();
    auto creator = sub_process_sync::create(real, {});
    REQUIRE(::stat(shm_path(real).c_str(), &st) == 0);
  }
  const auto name = unique_name();
  auto zeros = ag::tensor_store::create_shared("/" + name, static_cast<std::size_t>(st.st_size));
  CHECK_THROWS_WITH(sub_process_sync::open(name),
                    Catch::Contains(name) && Catch::Contains("not a segment of this version"));
}

TEST_CASE("the segment has mode 0600 and goes with its creator, not its opener", "[ipc]") {
  const auto name = unique_name();
  {
    auto creator = sub_process_sync::create(name, some_args());
    struct stat st {};
    REQUIRE(::stat(shm_path(name).c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_uid == ::geteuid());
    { auto opener = sub_process_sync::open(name); }
    CHECK(exists(shm_path(name)));
    CHECK(sub_process_sync::open(name).args() == some_args());
  }
  CHECK_FALSE(exists(shm_path(name)));
}

TEST_CASE("a moved segment is removed once, by its new owner", "[ipc]") {
  const auto name = unique_name();
  {
    auto creator = sub_process_sync::create(name, some_args());
    sub_process_sync moved{std::move(creator)};
    { sub_process_sync dropped{std::move(creator)}; }
    CHECK(exists(shm_path(name)));
    sub_process_sync assigned;
    assigned = std::move(moved);
    CHECK(exists(shm_path(name)));
    CHECK(assigned.name() == name);
    CHECK(assigned.args() == some_args());
  }
  CHECK_FALSE(exists(shm_path(name)));
}

TEST_CASE("a peer stopped while it holds the segment's lock holds up none of the waits", "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) { // takes the lock and gives it back as fast as it can, until it is killed
    auto opener = sub_process_sync::open(name);
    for (;;)
      opener.report_error("busy");
  }
  // Stopped at random points, the child often holds the mutex, for as long as it stays stopped:
  // a wait that needed the mutex would fail or hang here.
  for (int i = 0; i < 200; ++i) {
    REQUIRE(::kill(child, SIGSTOP) == 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, WUNTRACED) == child);
    REQUIRE(WIFSTOPPED(status));
    const auto start = clock_type::now();
    CHECK_FALSE(creator.wait_started(start + 2ms, always));
    CHECK(clock_type::now() - start < 1s);
    REQUIRE(::kill(child, SIGCONT) == 0);
  }
  creator.notify_exit();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("a segment without a name is opened through the descriptor its child inherits, and "
          "carries the driver's file names back",
          "[ipc]") {
  const auto name = unique_name();
  auto creator = sub_process_sync::create(name, some_args());
  creator.unlink_name();
  CHECK_FALSE(exists(shm_path(name)));
  // A child's view: its own descriptor of the segment, as posix_spawn's dup2 gives it.
  const int fd = ::fcntl(creator.fd(), F_DUPFD_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  auto child = sub_process_sync::open_inherited(fd);
  CHECK(child.args() == some_args());
  CHECK(creator.driver_files().empty());
  child.record_driver_files({"cuda.shm.0.283.1", "cuda.shm.0.283.2"});
  CHECK(creator.driver_files() == std::vector<std::string>{"cuda.shm.0.283.1", "cuda.shm.0.283.2"});
  child.record_driver_files({std::string(2000, 'x'), "cuda.shm.0.283.3"}); // too long: left out
  CHECK(creator.driver_files() == std::vector<std::string>{"cuda.shm.0.283.3"});
  child.notify_started();
  CHECK(creator.wait_started(clock_type::now() + 1s, [] { return true; }));
}

TEST_CASE("a descriptor that is not a segment is refused naming it", "[ipc]") {
  const int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  REQUIRE(fd >= 0);
  CHECK_THROWS_WITH(sub_process_sync::open_inherited(fd),
                    Catch::Contains("descriptor " + std::to_string(fd))
                      && Catch::Contains("not a segment of this version"));
}
