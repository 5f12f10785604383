// Tests of ipc/leftovers: what a dead runtime left (its runtime directory, the shared memory named
// after it) is removed, and nothing else is: not other programs' look-alike names, not a directory
// without a valid marker of this user, not a live runtime's, not through a symlink.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ipc/leftovers.hpp"
#include "ipc/runtime_dir.hpp"
#include "ipc/sub_process.hpp"
#include "ipc/tensor_store.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/temp_files.hpp"

using namespace std::chrono_literals;
using ag::test::read_until_closed;
using ag::test::scoped_tmpdir;

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

void write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}


// Shared-memory objects (and symlinks in /dev/shm) a test made; unlinked at the end whatever
// happened, so that nothing is left in /dev/shm.
struct shm_names {
  std::vector<std::string> names;
  ~shm_names() {
    for (const auto& n : names)
      ::unlink(("/dev/shm/" + n).c_str());
  }
  // Creates the regular object /dev/shm/<name> (mode 0600) of one page.
  void create(const std::string& name) {
    names.push_back(name);
    const int fd = ::shm_open(("/" + name).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, 4096) == 0);
    ::close(fd);
  }
  void symlink(const std::string& name, const std::string& target) {
    names.push_back(name);
    REQUIRE(::symlink(target.c_str(), ("/dev/shm/" + name).c_str()) == 0);
  }
  std::string path(const std::string& name) const { return "/dev/shm/" + name; }
};

// Waits for `pid` to end, up to `limit`, then kills it; its exit status.
int reap(pid_t pid, std::chrono::milliseconds limit = 10000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("process " << pid << " did not end within " << limit.count() << " ms");
    }
    std::this_thread::sleep_for(1ms);
  }
  return status;
}

// A pid that ran a moment ago and no longer runs.
long dead_pid() {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0)
    ::_exit(0);
  reap(pid);
  return pid;
}

std::string boot_id() {
  const auto self = ag::identity_of(::getpid());
  REQUIRE(self);
  return self->boot_id;
}

std::string tag(int n) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016x", n);
  return buf;
}

std::string runtime_name(long pid, int n) {
  return "ag-" + std::to_string(pid) + "-actorgraph-" + tag(n);
}

// Makes <tmp>/<name> (mode 0700) holding `marker` as its owner file when given, and a file "pub".
std::string make_dir(const std::string& tmp, const std::string& name,
                     const std::optional<std::string>& marker) {
  const auto dir = tmp + "/" + name;
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  if (marker)
    write_file(dir + "/owner", *marker);
  write_file(dir + "/pub", "");
  return dir;
}

std::string marker_of(long pid, unsigned long long start, const std::string& boot) {
  return ag::owner_marker_text(ag::process_identity{pid, start, boot});
}

} // namespace

TEST_CASE("an owner marker parses back to what it was written from, and nothing else parses",
          "[ipc][leftovers]") {
  const ag::process_identity who{1234, 98765, "0f1e2d3c-aaaa-bbbb-cccc-0123456789ab"};
  const auto text = ag::owner_marker_text(who);
  CHECK(text
        == "actorgraph runtime directory v1\npid 1234\nstart 98765\n"
           "boot 0f1e2d3c-aaaa-bbbb-cccc-0123456789ab\n");
  const auto back = ag::parse_owner_marker(text);
  REQUIRE(back);
  CHECK(back->pid == 1234);
  CHECK(back->start_time == 98765);
  CHECK(back->boot_id == who.boot_id);

  const auto unknown_boot = ag::parse_owner_marker(marker_of(7, 8, ""));
  REQUIRE(unknown_boot);
  CHECK(unknown_boot->boot_id.empty());

  for (const std::string& bad : std::vector<std::string>{
         "", "actorgraph runtime directory v1\n", text.substr(0, text.size() - 1),
        text + "\n", text + "extra\n",
        "actorgraph runtime directory v2\npid 1234\nstart 98765\nboot unknown\n",
        "actorgraph runtime directory v1\npid 0\nstart 98765\nboot unknown\n",
        "actorgraph runtime directory v1\npid 01234\nstart 98765\nboot unknown\n",
        "actorgraph runtime directory v1\npid -1234\nstart 98765\nboot unknown\n",
        "actorgraph runtime directory v1\npid 99999999999\nstart 98765\nboot unknown\n",
        "actorgraph runtime directory v1\npid 1234\nstart x\nboot unknown\n",
        "actorgraph runtime directory v1\npid 1234\nstart 98765\nboot \n",
        "actorgraph runtime directory v1\npid 1234\nstart 98765\nboot ../../etc\n",
        "actorgraph runtime directory v1\nstart 98765\npid 1234\nboot unknown\n"}) {
    INFO("marker: " << bad);
    CHECK_FALSE(ag::parse_owner_marker(bad));
  }
}

TEST_CASE("only names of the shape ag-<pid>-actorgraph-<16 hex digits> name a runtime's owner",
          "[ipc][leftovers]") {
  CHECK(ag::runtime_dir_owner("ag-4242-actorgraph-0123456789abcdef") == 4242);
  CHECK(ag::runtime_dir_owner("ag-1-actorgraph-ffffffffffffffff") == 1);
  for (const std::string& other : std::vector<std::string>{
         "ag-2024-report", "ag-99999-mydata", "ag-4242-XXXXXX", "ag-4242-0123456789abcdef-store",
        "ag-4242-actorgraph-0123456789abcde", "ag-4242-actorgraph-0123456789abcdef0",
        "ag-4242-actorgraph-0123456789ABCDEF", "ag-4242-actorgraph-0123456789abcdeg",
        "ag-04242-actorgraph-0123456789abcdef", "ag--actorgraph-0123456789abcdef",
        "ag-99999999999-actorgraph-0123456789abcdef", "ag-4242-actorgraph-0123456789abcdef-store",
        "xag-4242-actorgraph-0123456789abcdef", "ag-4242-actorgraphs-0123456789abcdef"}) {
    INFO("name: " << other);
    CHECK(ag::runtime_dir_owner(other) == 0);
  }
}

TEST_CASE("a runtime's owner is gone once its pid ends, is reused or belongs to another boot, "
          "and not while it runs",
          "[ipc][leftovers]") {
  const auto self = ag::identity_of(::getpid());
  REQUIRE(self);
  CHECK(self->pid == ::getpid());
  CHECK_FALSE(self->boot_id.empty());
  CHECK_FALSE(ag::owner_gone(*self));

  auto reused = *self;
  reused.start_time += 1; // the same pid, started at another time: another process
  CHECK(ag::owner_gone(reused));

  auto rebooted = *self;
  rebooted.boot_id = "00000000-0000-0000-0000-000000000000";
  CHECK(ag::owner_gone(rebooted));

  const long dead = dead_pid();
  CHECK_FALSE(ag::identity_of(dead));
  CHECK(ag::owner_gone(ag::process_identity{dead, self->start_time, self->boot_id}));

  SECTION("a zombie has ended") {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
      ::_exit(0);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!ag::test::exited(pid) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    CHECK(ag::test::exited(pid)); // a zombie until reaped below
    CHECK(ag::owner_gone(ag::process_identity{pid, 0, self->boot_id}));
    CHECK_FALSE(ag::identity_of(pid));
    reap(pid);
  }
}

TEST_CASE("a runtime directory holds an owner marker naming this process, and its name begins "
          "the names of its shared memory",
          "[ipc][leftovers]") {
  scoped_tmpdir tmp;
  auto dir = ag::runtime_dir::create();
  CHECK(ag::runtime_dir_owner(dir.name()) == ::getpid());
  CHECK(dir.path() == tmp.path + "/" + dir.name());
  CHECK(dir.marker_path() == dir.path() + "/owner");
  struct stat st {};
  REQUIRE(::lstat(dir.marker_path().c_str(), &st) == 0);
  CHECK(S_ISREG(st.st_mode));
  CHECK((st.st_mode & 07777) == 0600);
  std::FILE* f = std::fopen(dir.marker_path().c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[512] = {};
  const auto n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const auto owner = ag::parse_owner_marker(std::string(buf, n));
  REQUIRE(owner);
  const auto self = ag::identity_of(::getpid());
  REQUIRE(self);
  CHECK(owner->pid == self->pid);
  CHECK(owner->start_time == self->start_time);
  CHECK(owner->boot_id == self->boot_id);
}

TEST_CASE("other programs' look-alikes, live runtimes and anything not provably ours survive "
          "the clean-up",
          "[ipc][leftovers]") {
  scoped_tmpdir tmp;
  shm_names shm;
  const long dead = dead_pid();
  const auto boot = boot_id();
  const auto dead_marker = marker_of(dead, 1, boot);
  std::vector<std::string> survivors; // paths that must still be there afterwards

  // Other programs' names that the old clean-up took for a runtime's.
  make_dir(tmp.path, "ag-2024-report", std::nullopt);
  survivors.push_back(tmp.path + "/ag-2024-report/pub");
  shm.create("ag-99999-mydata");
  shm.create("ag-" + std::to_string(dead) + "-mydata");
  survivors.push_back(shm.path("ag-99999-mydata"));
  survivors.push_back(shm.path("ag-" + std::to_string(dead) + "-mydata"));

  // Our shape of name, but no marker, or a marker that does not parse, or one naming another pid.
  const auto unmarked = runtime_name(dead, 1);
  const auto garbled = runtime_name(dead, 2);
  const auto other_pid = runtime_name(dead, 3);
  make_dir(tmp.path, unmarked, std::nullopt);
  make_dir(tmp.path, garbled, "actorgraph runtime directory v1\npid " + std::to_string(dead)
                                  + "\nstart yesterday\nboot unknown\n");
  make_dir(tmp.path, other_pid, marker_of(dead_pid(), 1, boot));
  for (const auto& name : {unmarked, garbled, other_pid}) {
    shm.create(name + "-store");
    survivors.push_back(tmp.path + "/" + name + "/pub");
    survivors.push_back(shm.path(name + "-store"));
  }

  // A live runtime: this process's, made the real way, with a real store named after it.
  auto live = ag::runtime_dir::create();
  auto live_store = ag::tensor_store::create_shared("/" + live.name() + "-store", 4096);
  survivors.push_back(live.marker_path());
  survivors.push_back(shm.path(live.name() + "-store"));

  // A symlink with a dead runtime's name, to a dead runtime's directory elsewhere.
  scoped_tmpdir elsewhere;
  const auto target_name = runtime_name(dead, 4);
  make_dir(elsewhere.path, target_name, dead_marker);
  REQUIRE(::symlink((elsewhere.path + "/" + target_name).c_str(),
                    (tmp.path + "/" + target_name).c_str())
          == 0);
  survivors.push_back(tmp.path + "/" + target_name);
  survivors.push_back(elsewhere.path + "/" + target_name + "/owner");
  survivors.push_back(elsewhere.path + "/" + target_name + "/pub");

  // A directory whose marker is a symlink to a valid dead marker.
  const auto linked_marker = runtime_name(dead, 5);
  make_dir(tmp.path, linked_marker, std::nullopt);
  write_file(elsewhere.path + "/marker", dead_marker);
  REQUIRE(::symlink((elsewhere.path + "/marker").c_str(),
                    (tmp.path + "/" + linked_marker + "/owner").c_str())
          == 0);
  survivors.push_back(tmp.path + "/" + linked_marker + "/pub");

  // A directory others may enter: not one a runtime made.
  const auto open_dir = runtime_name(dead, 6);
  make_dir(tmp.path, open_dir, dead_marker);
  REQUIRE(::chmod((tmp.path + "/" + open_dir).c_str(), 0755) == 0);
  survivors.push_back(tmp.path + "/" + open_dir + "/owner");

  // Another user's directory, and this user's directory with another user's marker.
  if (::geteuid() == 0) {
    const auto foreign = runtime_name(dead, 7);
    make_dir(tmp.path, foreign, dead_marker);
    REQUIRE(::chown((tmp.path + "/" + foreign).c_str(), 65534, 65534) == 0);
    survivors.push_back(tmp.path + "/" + foreign + "/owner");
    const auto foreign_marker = runtime_name(dead, 8);
    make_dir(tmp.path, foreign_marker, dead_marker);
    REQUIRE(::chown((tmp.path + "/" + foreign_marker + "/owner").c_str(), 65534, 65534) == 0);
    survivors.push_back(tmp.path + "/" + foreign_marker + "/owner");
  } else {
    WARN("not root: the cases of another user's files are not set up");
  }

  const auto removed = ag::remove_leftovers(tmp.path);
  CHECK(removed.shm_objects == 0);
  CHECK(removed.directories == 0);
  for (const auto& path : survivors) {
    INFO("expected to survive: " << path);
    CHECK(exists(path));
  }
}

TEST_CASE("what a killed process's runtime left is removed: its shared memory, directory and "
          "marker, never a symlink's target nor another user's object",
          "[ipc][leftovers]") {
  scoped_tmpdir tmp;
  shm_names shm;
  scoped_tmpdir elsewhere; // after tmp: TMPDIR is tmp again once this goes
  ::setenv("TMPDIR", tmp.path.c_str(), 1);
  const std::string outside = elsewhere.path + "/precious";
  write_file(outside, "keep me");

  // A child makes a runtime directory and the store and segment named after it the real way, and
  // is killed before it can remove them. It touches no CAF, so fork is safe.
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipe_fds[0]);
    try {
      auto dir = ag::runtime_dir::create();
      auto store = ag::tensor_store::create_shared("/" + dir.name() + "-store", 1 << 20);
      const int seg = ::shm_open(("/" + dir.name() + "-sync-1").c_str(),
                                 O_RDWR | O_CREAT | O_EXCL, 0600);
      std::FILE* f = std::fopen((dir.path() + "/pull").c_str(), "w");
      if (seg < 0 || f == nullptr
          || ::symlink(outside.c_str(), (dir.path() + "/timeline-1").c_str()) != 0)
        ::_exit(1);
      std::fclose(f);
      (void)!::write(pipe_fds[1], dir.name().data(), dir.name().size());
      ::close(pipe_fds[1]);
      ::raise(SIGKILL);
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(pipe_fds[1]);
  const std::string name =
    read_until_closed(pipe_fds[0], std::chrono::steady_clock::now() + std::chrono::seconds{10});
  ::close(pipe_fds[0]);
  const int status = reap(pid);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  REQUIRE(ag::runtime_dir_owner(name) == pid);
  const auto dir = tmp.path + "/" + name;
  shm.names.push_back(name + "-store"); // unlinked at the end should the clean-up miss them
  shm.names.push_back(name + "-sync-1");
  REQUIRE(exists(dir + "/owner"));
  REQUIRE(exists(shm.path(name + "-store")));
  REQUIRE(exists(shm.path(name + "-sync-1")));

  // Names that only resemble the dead runtime's, a symlink with one of its names, and one of its
  // names held by another user.
  shm.create(name + "-storage");
  shm.create(name + "-sync-");
  shm.create(name + "-sync-2x");
  shm.symlink(name + "-sync-3", outside);
  if (::geteuid() == 0) {
    shm.create(name + "-sync-4");
    REQUIRE(::chown(shm.path(name + "-sync-4").c_str(), 65534, 65534) == 0);
  }

  const auto removed = ag::remove_leftovers(tmp.path);
  CHECK(removed.shm_objects == 2);
  CHECK(removed.directories == 1);
  CHECK_FALSE(exists(dir));
  CHECK_FALSE(exists(shm.path(name + "-store")));
  CHECK_FALSE(exists(shm.path(name + "-sync-1")));
  CHECK(exists(outside)); // the symlink inside the directory went, not what it pointed to
  for (const auto& kept : {"-storage", "-sync-", "-sync-2x", "-sync-3"})
    CHECK(exists(shm.path(name + kept)));
  if (::geteuid() == 0)
    CHECK(exists(shm.path(name + "-sync-4")));

  const auto again = ag::remove_leftovers(tmp.path);
  CHECK(again.shm_objects == 0);
  CHECK(again.directories == 0);
}

TEST_CASE("a runtime directory whose pid now runs another process is removed", "[ipc][leftovers]") {
  scoped_tmpdir tmp;
  shm_names shm;
  const auto self = ag::identity_of(::getpid());
  REQUIRE(self);
  // This process's pid, but started at another time: the pid was reused.
  const auto name = runtime_name(::getpid(), 9);
  make_dir(tmp.path, name, marker_of(::getpid(), self->start_time + 1, self->boot_id));
  shm.create(name + "-store");
  const auto removed = ag::remove_leftovers(tmp.path);
  CHECK(removed.shm_objects == 1);
  CHECK(removed.directories == 1);
  CHECK_FALSE(exists(tmp.path + "/" + name));
  CHECK_FALSE(exists(shm.path(name + "-store")));
}

TEST_CASE("a directory of a dead runtime holding a subdirectory is left whole", "[ipc][leftovers]") {
  scoped_tmpdir tmp;
  const long dead = dead_pid();
  const auto dir = make_dir(tmp.path, runtime_name(dead, 10), marker_of(dead, 1, boot_id()));
  REQUIRE(::mkdir((dir + "/sub").c_str(), 0700) == 0);
  write_file(dir + "/sub/data", "x");
  const auto removed = ag::remove_leftovers(tmp.path);
  CHECK(removed.directories == 0);
  CHECK(exists(dir + "/owner"));
  CHECK(exists(dir + "/sub/data"));
}

TEST_CASE("a runtime in a controller killed with SIGKILL leaves nothing for the next clean-up",
          "[ipc][leftovers]") {
  scoped_tmpdir tmp;
  auto controller = ag::sub_process::spawn(
    ag::test::beside_this_program("ag-test-controller", AG_TEST_CONTROLLER), {tmp.path, "1"});
  const pid_t dead = controller.pid();
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (::access((tmp.path + "/ready").c_str(), F_OK) != 0
         && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  REQUIRE(::access((tmp.path + "/ready").c_str(), F_OK) == 0);
  const auto children = ag::test::runner_children(dead);
  controller.kill(SIGKILL);
  REQUIRE(controller.wait_for(5000ms));
  ::unlink((tmp.path + "/ready").c_str());
  // Its store and channel had no name once made, nor its start-up segments once its children
  // started; its endpoints are abstract: nothing is in /dev/shm or TMPDIR.
  CHECK(ag::test::my_shm(dead).empty());
  CHECK(ag::test::list_dir(tmp.path).empty());

  const auto removed = ag::remove_leftovers(tmp.path);
  CHECK(removed.shm_objects == 0);
  CHECK(removed.directories == 0);
  CHECK(ag::test::my_shm(dead).empty());
  CHECK(ag::test::list_dir(tmp.path).empty());
  for (const auto& n : ag::test::my_shm(dead)) // nothing left behind should the checks fail
    ::unlink(("/dev/shm/" + n).c_str());
  // Its child dies with it (PR_SET_PDEATHSIG); wait, so that none outlives the test.
  const auto child_deadline = std::chrono::steady_clock::now() + 5s;
  for (pid_t c : children)
    while (!ag::test::exited(c) && std::chrono::steady_clock::now() < child_deadline)
      std::this_thread::sleep_for(10ms);
  for (pid_t c : children)
    CHECK(ag::test::exited(c));
}

TEST_CASE("the driver's files a child named are removed when they have the driver's shape and are "
          "this user's regular files in /dev/shm, and nothing else is",
          "[ipc][leftovers]") {
  const std::string uid = std::to_string(::getuid());
  const std::string tag = std::to_string(::getpid());
  const std::string its = "cuda.shm." + uid + ".9" + tag + ".1";
  const std::vector<std::string> others{
    "cuda.shm." + uid + "9." + tag + ".1",  // another user's
    "cuda.shm." + uid + ".9" + tag + ".1x", // not the driver's shape
    "cuda.shm." + uid + ".9" + tag,         // nor this
  };
  write_file("/dev/shm/" + its, "x");
  for (const auto& o : others)
    write_file("/dev/shm/" + o, "x");
  const std::string link = "cuda.shm." + uid + ".9" + tag + ".2";
  REQUIRE(::symlink(("/dev/shm/" + its).c_str(), ("/dev/shm/" + link).c_str()) == 0);
  std::vector<std::string> named = others;
  named.insert(named.end(), {its, link, "../../tmp/cuda.shm." + uid + ".1.1", "missing"});
  CHECK(ag::remove_cuda_ipc_files(named) == 1);
  CHECK_FALSE(exists("/dev/shm/" + its));
  for (const auto& o : others) {
    CHECK(exists("/dev/shm/" + o));
    ::unlink(("/dev/shm/" + o).c_str());
  }
  struct stat st {};
  CHECK(::lstat(("/dev/shm/" + link).c_str(), &st) == 0); // a link stays, and is not followed
  ::unlink(("/dev/shm/" + link).c_str());
}
