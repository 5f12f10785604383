// A process under a small descriptor limit (RLIMIT_NOFILE): a process-mode runtime that could not
// get the descriptors it needs is refused at start-up with ag::error naming the limit, instead of
// libzmq aborting the whole process; the runtimes made before it work and end as usual, and
// nothing of any of them is left behind.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using namespace std::chrono_literals;
using Catch::Contains;

namespace {

// Runs `program ARGS` with RLIMIT_NOFILE `limit`, its output collected, 120 s at most.
program_outcome run_limited(const char* program, const std::vector<std::string>& args,
                            rlim_t limit) {
  return run_collected(program, args, AG_TEST_RUNNER, [limit] {
    const struct rlimit rl{limit, limit};
    return ::setrlimit(RLIMIT_NOFILE, &rl) == 0 ? std::string{} : std::string{"setrlimit failed"};
  });
}

// Runtime directories of process `pid` left in $TMPDIR (or /tmp).
std::vector<std::string> runtime_dirs_of(pid_t pid) {
  const char* t = std::getenv("TMPDIR");
  const std::string dir = t && *t ? t : "/tmp";
  std::vector<std::string> out;
  for (const auto& n : list_dir(dir))
    if (n.rfind("ag-" + std::to_string(pid) + "-actorgraph-", 0) == 0)
      out.push_back(n);
  return out;
}

} // namespace

TEST_CASE("under a descriptor limit too low for one runtime, it is refused naming the limit, not "
          "aborted, and leaves nothing",
          "[process]") {
  for (const rlim_t limit : {rlim_t{12}, rlim_t{16}, rlim_t{20}}) {
    INFO("ulimit -n " << limit);
    const auto r = run_limited(AG_TEST_MANY_RUNTIMES, {"1"}, limit);
    INFO("exit " << r.code << ", signal " << r.signal << ": " << r.text);
    CHECK(r.signal == 0);
    CHECK(r.code == 3);
    CHECK_THAT(r.text, Contains("refused at 1: ") && Contains("RLIMIT_NOFILE")
                         && Contains(std::to_string(limit)));
    CHECK(my_shm(r.pid).empty());
    CHECK(runtime_dirs_of(r.pid).empty());
  }
}

TEST_CASE("under a descriptor limit that holds some runtimes, the next is refused naming the limit "
          "and the others work and end as usual, leaving nothing",
          "[process]") {
  const auto r = run_limited(AG_TEST_MANY_RUNTIMES, {"12"}, 160);
  INFO("exit " << r.code << ", signal " << r.signal << ": " << r.text);
  CHECK(r.signal == 0);
  CHECK(r.code == 3);
  CHECK_THAT(r.text, Contains("refused at ") && Contains("RLIMIT_NOFILE") && Contains("160"));
  CHECK(my_shm(r.pid).empty());
  CHECK(runtime_dirs_of(r.pid).empty());
  // With room for all of them, all of them work.
  const auto ok = run_limited(AG_TEST_MANY_RUNTIMES, {"3"}, 160);
  INFO("exit " << ok.code << ": " << ok.text);
  CHECK(ok.code == 0);
  CHECK_THAT(ok.text, Contains("ok 3"));
}
