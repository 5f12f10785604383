// Tests of ipc/runtime_dir: a private (0700) directory under $TMPDIR whose endpoints live inside
// it, removed with everything in it when its owner ends, and never by a moved-from object.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/runtime_dir.hpp"
#include "tests/temp_files.hpp"

using ag::runtime_dir;

using ag::test::scoped_tmpdir;

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

void touch(const std::string& path) {
  if (std::FILE* f = std::fopen(path.c_str(), "w"))
    std::fclose(f);
}


bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

} // namespace

TEST_CASE("create makes a directory of mode 0700 under TMPDIR", "[ipc]") {
  scoped_tmpdir tmp;
  std::string path;
  {
    auto dir = runtime_dir::create();
    path = dir.path();
    CHECK(starts_with(path, tmp.path + "/ag-"));
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECK((st.st_mode & 07777) == 0700);
    CHECK(st.st_uid == ::geteuid());
  }
  CHECK_FALSE(exists(path));
  CHECK(::rmdir(tmp.path.c_str()) == 0); // nothing else was left in TMPDIR
}

TEST_CASE("two runtime directories are distinct", "[ipc]") {
  scoped_tmpdir tmp;
  auto a = runtime_dir::create();
  auto b = runtime_dir::create();
  CHECK(a.path() != b.path());
  CHECK(a.endpoint("pub") != b.endpoint("pub"));
}

TEST_CASE("an endpoint is an ipc address inside the directory", "[ipc]") {
  scoped_tmpdir tmp;
  auto dir = runtime_dir::create();
  CHECK(dir.endpoint("pub") == "ipc://" + dir.path() + "/pub");
  CHECK(dir.endpoint("pull") == "ipc://" + dir.path() + "/pull");
}

TEST_CASE("without TMPDIR the directory is made under /tmp", "[ipc]") {
  scoped_tmpdir tmp;
  SECTION("unset") { ::unsetenv("TMPDIR"); }
  SECTION("empty") { ::setenv("TMPDIR", "", 1); }
  std::string path;
  {
    auto dir = runtime_dir::create();
    path = dir.path();
    CHECK(starts_with(path, "/tmp/ag-"));
    CHECK(exists(path));
  }
  CHECK_FALSE(exists(path));
}

TEST_CASE("a TMPDIR that does not exist is an error naming the path", "[ipc]") {
  scoped_tmpdir tmp;
  const auto missing = tmp.path + "/missing";
  ::setenv("TMPDIR", missing.c_str(), 1);
  CHECK_THROWS_WITH(runtime_dir::create(), Catch::Contains(missing + "/ag-"));
  CHECK_FALSE(exists(missing));
}

TEST_CASE("destroying a runtime directory removes it and the files inside it", "[ipc]") {
  scoped_tmpdir tmp;
  std::string path;
  {
    auto dir = runtime_dir::create();
    path = dir.path();
    touch(path + "/pub");
    touch(path + "/pull");
    touch(path + "/.hidden");
    REQUIRE(exists(path + "/pub"));
    REQUIRE(exists(path + "/.hidden"));
  }
  CHECK_FALSE(exists(path + "/pub"));
  CHECK_FALSE(exists(path));
}

TEST_CASE("a moved-from runtime directory removes nothing", "[ipc]") {
  scoped_tmpdir tmp;
  std::string path;
  {
    auto dir = runtime_dir::create();
    path = dir.path();
    touch(path + "/pub");
    runtime_dir moved{std::move(dir)};
    CHECK(dir.path().empty());
    CHECK(moved.path() == path);
    { runtime_dir dropped{std::move(dir)}; }
    CHECK(exists(path + "/pub"));
  }
  CHECK_FALSE(exists(path));
}

// Run in a child process: were the assignment to corrupt the heap, the child dies, not the test run.
TEST_CASE("move assignment removes the target's directory and takes the other", "[ipc]") {
  scoped_tmpdir tmp;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGABRT, SIG_DFL); // die of the signal, without Catch's report in the child
    std::signal(SIGSEGV, SIG_DFL);
    int failures = 0;
    {
      auto a = runtime_dir::create();
      auto b = runtime_dir::create();
      const auto old_path = a.path();
      const auto new_path = b.path();
      touch(old_path + "/pub");
      a = std::move(b);
      failures += exists(old_path);
      failures += a.path() != new_path;
      failures += !b.path().empty();
      failures += !exists(new_path);
      b = runtime_dir{};
      failures += !exists(new_path);
    }
    ::_exit(failures);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("the child " << (WIFSIGNALED(status) ? "was killed by signal " : "exited with code ")
                    << (WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
