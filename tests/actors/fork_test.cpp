// A runtime used in a process forked from the one that made it throws ag::error at once, in both
// modes, instead of waiting on threads the forked process does not have; the forked copy is never
// torn down there (its tensors and its runtime are let go without a word), and the parent's
// runtime, children and files are untouched by anything the forked process does.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using namespace std::chrono_literals;

namespace {

// What the forked process saw: one letter a step, 'T' for ag::error naming the fork, 'W' for
// anything else (another error, or no error).
template <class F>
char in_forked(F step) {
  try {
    step();
  } catch (const ag::error& e) {
    const std::string what = e.what();
    return what.find("was forked from it and cannot use it") != std::string::npos ? 'T' : 'W';
  } catch (...) {
  }
  return 'W';
}

} // namespace

TEST_CASE("a runtime used after fork() throws at once naming the fork, and its parent goes on",
          "[process]") {
  for (const bool process : {false, true}) {
    INFO((process ? "process mode" : "thread mode"));
    {
      std::optional<ag::runtime> rt{std::in_place, sim_options(process, "sim:0,sim:1", 20s)};
      const auto kept = rt->full({4}, 2.0f, ag::device::sim(0));
      const auto on_cpu = rt->full({4}, 5.0f, ag::device::cpu());
      CHECK(kept.to_vector() == std::vector<float>(4, 2.0f));
      const auto shm_before = my_shm();
      int pipe_fds[2];
      REQUIRE(::pipe(pipe_fds) == 0);
      const pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        ::alarm(10); // a hang is a failure, not a stuck test
        std::string seen;
        seen += in_forked([&] { rt->sync(); });
        seen += in_forked([&] { (void)kept.to_vector(); });
        seen += in_forked([&] { (void)on_cpu.to_vector(); });
        seen += in_forked([&] { (void)(kept + kept); });
        seen += in_forked([&] { (void)rt->full({2}, 1.0f, ag::device::sim(1)); });
        seen += in_forked([&] { (void)rt->stats(); });
        seen += in_forked([&] { (void)ag::all_reduce({kept, kept.to(ag::device::sim(1))}); });
        {
          const auto copy = kept; // a handle let go in the forked process releases nothing
        }
        rt.reset(); // nor does the runtime: the parent still runs it
        (void)!::write(pipe_fds[1], seen.data(), seen.size());
        ::_exit(0);
      }
      ::close(pipe_fds[1]);
      const std::string seen =
        read_until_closed(pipe_fds[0], std::chrono::steady_clock::now() + 30s);
      ::close(pipe_fds[0]);
      int status = 0;
      REQUIRE(::waitpid(pid, &status, 0) == pid);
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
      CHECK(seen == "TTTTTTT");
      // The parent's runtime, tensors, children and files are as they were.
      CHECK(my_shm() == shm_before);
      CHECK(kept.to_vector() == std::vector<float>(4, 2.0f));
      CHECK(on_cpu.to_vector() == std::vector<float>(4, 5.0f));
      CHECK((kept + kept).to_vector() == std::vector<float>(4, 4.0f));
      rt->sync();
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}
