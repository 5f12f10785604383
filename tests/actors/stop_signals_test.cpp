// ag::install_stop_signals() in a real controller (tests/helpers/test_controller.cpp) with real
// children: a signal the controller inherited as ignored stays ignored, a handler the application
// installed before still runs after the clean-up, and SIGQUIT cleans up as SIGTERM does.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "ipc/sub_process.hpp"
#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using namespace std::chrono_literals;

namespace {

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// ag-test-controller DIR N MODE, started by /bin/sh after `shell_setup` (traps, ulimits), which
// the exec'd controller inherits; its pid is the shell's. Returns once DIR/ready exists.
ag::sub_process start_controller(const std::string& dir, int sims, const std::string& mode,
                                 const std::string& shell_setup) {
  const auto program = beside_this_program("ag-test-controller", AG_TEST_CONTROLLER);
  auto p = ag::sub_process::spawn("/bin/sh", {"-c", shell_setup + " exec '" + program + "' '" + dir
                                                      + "' " + std::to_string(sims) + " " + mode});
  REQUIRE(within(20000ms, [&] { return exists(dir + "/ready") || !p.running() || p.try_wait(); }));
  REQUIRE(p.running());
  return p;
}

// Every one of `children` exits within 2 s, and `pid` left no shared memory.
void check_cleaned_up(const std::vector<pid_t>& children, pid_t pid) {
  CHECK(all_exited_within(2000ms, children));
  // The clean-up kills the children first and then unlinks the files: a child can be gone an
  // instant before the last file is.
  CHECK(within(2000ms, [&] { return my_shm(pid).empty(); }));
}

} // namespace

TEST_CASE("with stop signals installed, a SIGHUP the controller inherited as ignored stays "
          "ignored",
          "[signals]") {
  private_tmpdir tmp;
  // As under nohup: the shell ignores SIGHUP and the controller inherits that through exec.
  auto controller = start_controller(tmp.path, 1, "stop-signals", "trap '' HUP;");
  const pid_t pid = controller.pid();
  const auto children = runner_children(pid);
  REQUIRE(children.size() == 1);
  controller.kill(SIGHUP);
  // Were SIGHUP handled, it would end the controller by SIGHUP, delivered before the SIGTERM
  // (lower signals first); ignored, the SIGTERM is what ends it.
  controller.kill(SIGTERM);
  const auto& status = controller.wait_for(5000ms);
  REQUIRE(status);
  CHECK(status->signal == SIGTERM);
  check_cleaned_up(children, pid);
  ::unlink((tmp.path + "/ready").c_str());
  CHECK(list_dir(tmp.path).empty());
}

TEST_CASE("with stop signals installed, SIGQUIT removes a controller's children, shared memory "
          "and directory, then ends it by SIGQUIT",
          "[signals]") {
  private_tmpdir tmp;
  auto controller = start_controller(tmp.path, 2, "stop-signals", "ulimit -c 0;"); // no core file
  const pid_t pid = controller.pid();
  const auto children = runner_children(pid);
  REQUIRE(children.size() == 2);
  REQUIRE(my_shm(pid).empty()); // nothing has a name while it runs
  controller.kill(SIGQUIT);
  const auto& status = controller.wait_for(5000ms);
  REQUIRE(status);
  CHECK(status->signal == SIGQUIT);
  check_cleaned_up(children, pid);
  ::unlink((tmp.path + "/ready").c_str());
  CHECK(list_dir(tmp.path).empty());
}

TEST_CASE("a handler the application installed before the stop signals runs after the clean-up, "
          "and when it returns the program goes on",
          "[signals]") {
  for (const auto& [sig, file] : std::vector<std::pair<int, std::string>>{
         {SIGTERM, "handled-plain-15"}, {SIGINT, "handled-siginfo-2"}}) {
    INFO("signal " << sig);
    private_tmpdir tmp;
    auto controller = start_controller(tmp.path, 2, "app-handlers", "");
    const pid_t pid = controller.pid();
    const auto children = runner_children(pid);
    REQUIRE(children.size() == 2);
    controller.kill(sig);
    // The clean-up first: the children go and the shared memory with them, while the controller
    // lives on.
    check_cleaned_up(children, pid);
    const auto& status = controller.wait_for(10000ms);
    REQUIRE(status);
    CHECK(status->signal == 0); // its handler returned: the signal did not end it
    CHECK(status->code == 0);   // it left its loop because its handler ran
    CHECK(exists(tmp.path + "/" + file));
    ::unlink((tmp.path + "/" + file).c_str());
    ::unlink((tmp.path + "/ready").c_str());
    CHECK(list_dir(tmp.path).empty()); // the runtime, ending normally, removed its directory
  }
}
