// Tests of ipc/sub_process with real child processes: exit codes and signals are reported, the
// pidfd wakes a poll when the child ends, a child in its own process group is never left behind,
// and a program that cannot start is an ag::error naming it.
#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/sub_process.hpp"

using ag::sub_process;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

// No process of this pid exists any more: not running, and not a zombie waiting to be reaped.
bool gone(pid_t pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

sub_process sleeper() { return sub_process::spawn("/bin/sleep", {"30"}); }

bool readable(int fd, int timeout_ms) {
  pollfd pfd{fd, POLLIN, 0};
  return ::poll(&pfd, 1, timeout_ms) == 1 && (pfd.revents & POLLIN) != 0;
}

// A file in $TMPDIR (or /tmp), removed at the end of the test.
struct temp_file {
  std::string path;

  explicit temp_file(mode_t mode) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string{tmp && *tmp ? tmp : "/tmp"} + "/ag-test-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const int fd = ::mkstemp(buf.data());
    REQUIRE(fd >= 0);
    ::close(fd);
    path = buf.data();
    ::chmod(path.c_str(), mode);
  }
  ~temp_file() { ::unlink(path.c_str()); }
};

} // namespace

TEST_CASE("a program that exits with code 0 is reported so", "[ipc]") {
  auto p = sub_process::spawn("/bin/true", {});
  CHECK(p.pid() > 0);
  const auto& st = p.wait_for(5s);
  REQUIRE(st);
  CHECK(st->code == 0);
  CHECK(st->signal == 0);
  CHECK(st->str() == "exited with code 0");
  CHECK_FALSE(p.running());
  CHECK(gone(p.pid()));
}

TEST_CASE("a program that exits with code 7 is reported so, with its arguments passed", "[ipc]") {
  auto p = sub_process::spawn("/bin/sh", {"-c", "exit 7"});
  const auto& st = p.wait_for(5s);
  REQUIRE(st);
  CHECK(st->code == 7);
  CHECK(st->signal == 0);
  CHECK(st->str() == "exited with code 7");
}

TEST_CASE("arguments with spaces and quotes reach the program unchanged", "[ipc]") {
  auto p = sub_process::spawn("/bin/sh", {"-c", "test \"$0\" = 'a b' && test \"$1\" = \"'c'\"",
                                          "a b", "'c'"});
  const auto& st = p.wait_for(5s);
  REQUIRE(st);
  CHECK(st->code == 0);
}

TEST_CASE("a program killed by SIGKILL is reported with signal 9", "[ipc]") {
  auto p = sleeper();
  CHECK(p.running());
  p.kill(SIGKILL);
  const auto& st = p.wait_for(5s);
  REQUIRE(st);
  CHECK(st->signal == 9);
  CHECK(st->code == 0);
  CHECK_THAT(st->str(), Catch::Contains("signal 9"));
  CHECK_FALSE(p.running());
}

TEST_CASE("a program ended by SIGTERM is reported with signal 15", "[ipc]") {
  auto p = sleeper();
  p.kill(SIGTERM);
  const auto& st = p.wait_for(5s);
  REQUIRE(st);
  CHECK(st->signal == SIGTERM);
  CHECK_THAT(st->str(), Catch::Contains("signal 15"));
}

TEST_CASE("waiting for a running program returns empty after about the timeout", "[ipc]") {
  auto p = sleeper();
  const auto start = clock_type::now();
  const auto& st = p.wait_for(200ms);
  const auto took = clock_type::now() - start;
  CHECK_FALSE(st);
  CHECK(took >= 100ms);
  CHECK(took < 5s);
  CHECK(p.running());
  CHECK_FALSE(p.try_wait());
}

TEST_CASE("the pidfd becomes readable when the program exits", "[ipc]") {
  SECTION("by itself") {
    auto p = sub_process::spawn("/bin/true", {});
    REQUIRE(p.pidfd() >= 0);
    CHECK(readable(p.pidfd(), 5000));
    REQUIRE(p.try_wait());
    CHECK(p.try_wait()->code == 0);
  }
  SECTION("when killed") {
    auto p = sleeper();
    REQUIRE(p.pidfd() >= 0);
    CHECK_FALSE(readable(p.pidfd(), 50));
    CHECK(::kill(p.pid(), SIGKILL) == 0);
    CHECK(readable(p.pidfd(), 5000));
    REQUIRE(p.try_wait());
    CHECK(p.try_wait()->signal == SIGKILL);
  }
}

TEST_CASE("destroying a sub_process of a running program kills and reaps it", "[ipc]") {
  pid_t pid = -1;
  {
    auto p = sleeper();
    pid = p.pid();
    REQUIRE(pid > 0);
    CHECK(::kill(pid, 0) == 0);
  }
  CHECK(gone(pid));
}

TEST_CASE("kill_and_reap ends a running program and leaves its status", "[ipc]") {
  auto p = sleeper();
  const pid_t pid = p.pid();
  p.kill_and_reap();
  CHECK_FALSE(p.running());
  REQUIRE(p.try_wait());
  CHECK(p.try_wait()->signal == SIGKILL);
  CHECK(gone(pid));
  p.kill_and_reap(); // a second time does nothing
  p.kill(SIGTERM);   // nor does a signal to a reaped process
  CHECK(p.try_wait()->signal == SIGKILL);
}

TEST_CASE("a moved sub_process owns the program and the moved-from one does not", "[ipc]") {
  auto p = sleeper();
  const pid_t pid = p.pid();
  const int fd = p.pidfd();
  sub_process q{std::move(p)};
  CHECK(p.pid() == -1);
  CHECK(p.pidfd() == -1);
  CHECK_FALSE(p.running());
  CHECK(q.pid() == pid);
  CHECK(q.pidfd() == fd);
  CHECK(q.running());
  { sub_process dropped = std::move(p); } // destroying an empty one touches nothing
  CHECK(::kill(pid, 0) == 0);
  q.kill_and_reap();
  CHECK(gone(pid));
}

TEST_CASE("move-assigning over a running sub_process kills and reaps its program", "[ipc]") {
  auto p = sleeper();
  auto q = sleeper();
  const pid_t old_pid = p.pid();
  const pid_t new_pid = q.pid();
  p = std::move(q);
  CHECK(gone(old_pid));
  CHECK(p.pid() == new_pid);
  CHECK(p.running());
  CHECK(::kill(new_pid, 0) == 0);
  p.kill_and_reap();
  CHECK(gone(new_pid));
}

TEST_CASE("an empty sub_process has no process and nothing to wait for", "[ipc]") {
  sub_process p;
  CHECK(p.pid() == -1);
  CHECK(p.pidfd() == -1);
  CHECK_FALSE(p.running());
  CHECK_FALSE(p.try_wait());
  CHECK_FALSE(p.wait_for(10ms));
  p.kill(SIGKILL);
  p.kill_and_reap();
}

TEST_CASE("the program runs in a process group of its own", "[ipc]") {
  auto p = sleeper();
  CHECK(::getpgid(p.pid()) == p.pid());
  CHECK(::getpgid(p.pid()) != ::getpgid(0));
}

TEST_CASE("spawning a missing program is an error naming its path", "[ipc]") {
  const std::string path = "/nonexistent/ag-test-no-such-program";
  CHECK_THROWS_WITH(sub_process::spawn(path, {}),
                    Catch::Contains(path) && Catch::Contains("No such file"));
}

TEST_CASE("spawning a program given without a path is an error naming it", "[ipc]") {
  // posix_spawn does not search PATH: a bare name is a file in the current directory.
  CHECK_THROWS_WITH(sub_process::spawn("ag-test-not-in-cwd", {}),
                    Catch::Contains("ag-test-not-in-cwd"));
}

TEST_CASE("spawning a file that is not executable is an error naming its path", "[ipc]") {
  temp_file f{0600};
  CHECK_THROWS_WITH(sub_process::spawn(f.path, {}), Catch::Contains(f.path));
}

TEST_CASE("spawning an executable file that is not a program is an error naming its path",
          "[ipc]") {
  // Mode 0700 and no content: access() lets it through, exec refuses it.
  temp_file f{0700};
  CHECK_THROWS_WITH(sub_process::spawn(f.path, {}), Catch::Contains(f.path));
}

TEST_CASE("spawning a directory is an error naming its path", "[ipc]") {
  CHECK_THROWS_WITH(sub_process::spawn("/", {}), Catch::Contains("cannot start /"));
}

TEST_CASE("exit statuses read as sentences", "[ipc]") {
  CHECK(ag::exit_status{3, 0}.str() == "exited with code 3");
  CHECK_THAT((ag::exit_status{0, 9}.str()), Catch::StartsWith("killed by signal 9"));
}
