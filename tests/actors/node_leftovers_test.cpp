// Nothing left on a node: a controller with devices on an ag-node, the node, and every child
// killed with SIGKILL, alone or all at once, leave nothing in /dev/shm or TMPDIR, without any
// later runtime or node to sweep (their shared memory has no name once made, their endpoints are
// abstract, their trust files are in memory).
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "ipc/sub_process.hpp"
#include "tests/actors/node_helpers.hpp"
#include "tests/actors/process_helpers.hpp"

using namespace std::chrono_literals;
using ag::test::node_process;

TEST_CASE("a controller with devices on a node, the node and their children killed with SIGKILL, "
          "alone or all at once, leave nothing in /dev/shm or TMPDIR",
          "[nodes][faults]") {
  const std::string what = GENERATE(std::string{"the node"}, std::string{"the controller"},
                                    std::string{"everything"});
  INFO("killed: " << what);
  ag::test::private_tmpdir tmp; // the node and the controller inherit it as TMPDIR
  ag::test::key_ring keys;
  const std::string ctl = keys.make("ctl");
  const std::string k1 = keys.make("n1");
  node_process n1{"n1", k1, {ctl}, 1000 * ag::test::tsan_slow};
  const auto node = n1.as_node(k1);
  ::setenv("AG_TEST_NODE", (node.name + "=" + node.endpoint + "=" + node.public_key_file).c_str(), 1);
  ::setenv("AG_TEST_KEY", (ctl + ".secret").c_str(), 1);
  auto controller = ag::sub_process::spawn(AG_TEST_CONTROLLER, {tmp.path, "2"});
  ::unsetenv("AG_TEST_NODE");
  ::unsetenv("AG_TEST_KEY");
  REQUIRE(ag::test::within(20000ms * ag::test::tsan_slow, [&] {
    return ::access((tmp.path + "/ready").c_str(), F_OK) == 0;
  }));
  const pid_t ctl_pid = controller.pid();
  const pid_t node_pid = n1.pid();
  const auto children = ag::test::runner_children(node_pid);
  REQUIRE(children.size() == 2);
  // Nothing has a name even while they run.
  CHECK(ag::test::my_shm(ctl_pid).empty());
  CHECK(ag::test::my_shm(node_pid).empty());
  if (what != "the controller")
    ::kill(node_pid, SIGKILL);
  if (what != "the node")
    controller.kill(SIGKILL);
  if (what == "everything")
    for (pid_t c : children)
      ::kill(c, SIGKILL);
  CHECK(ag::test::all_exited_within(5000ms * ag::test::tsan_slow, children));
  if (what == "the node") { // the controller saw its devices fail; it ends now
    controller.kill(SIGKILL);
  }
  REQUIRE(controller.wait_for(5000ms));
  n1.stop(); // reaps it (killed), or stops it
  CHECK(ag::test::my_shm(ctl_pid).empty());
  CHECK(ag::test::my_shm(node_pid).empty());
  ::unlink((tmp.path + "/ready").c_str());
  CHECK(ag::test::list_dir(tmp.path).empty());
}
