// A process-mode runtime in a small /dev/shm (a 64 MiB tmpfs in a mount namespace of its own, as
// Docker gives a container): what it needs there in all (store, channel, start-up segments) is
// checked together at start-up, and the store's pages are reserved as they are first handed out,
// so that space taken by another program later is an ag::error, never SIGBUS.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using namespace std::chrono_literals;
using Catch::Contains;

namespace {

// Runs ag-test-shm-filler ARGS in a private mount namespace whose /dev/shm is a 64 MiB tmpfs.
program_outcome run_in_small_dev_shm(const std::vector<std::string>& args) {
  return run_collected(AG_TEST_SHM_FILLER, args, AG_TEST_RUNNER, []() -> std::string {
    if (::geteuid() != 0)
      return "not root: mounting a tmpfs on /dev/shm needs root";
    if (::unshare(CLONE_NEWNS) != 0)
      return std::string{"unshare(CLONE_NEWNS): "} + std::strerror(errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      return std::string{"making / private: "} + std::strerror(errno);
    if (::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") != 0)
      return std::string{"mounting a 64 MiB tmpfs: "} + std::strerror(errno);
    return {};
  });
}

} // namespace

TEST_CASE("in a 64 MiB /dev/shm a store and a ring that each fit but not together are refused at "
          "start-up, naming both, not SIGBUS later",
          "[process]") {
  const auto r = run_in_small_dev_shm({"62", "4096", "60"});
  if (!r.ran) {
    WARN("skipped: " << r.text);
    return;
  }
  INFO("exit " << r.code << ", signal " << r.signal << ": " << r.text);
  CHECK(r.signal == 0);
  CHECK(r.code == 3);
  CHECK_THAT(r.text, Contains("refused: /dev/shm has") && Contains("graph_option::store_bytes")
                       && Contains("graph_option::ring_bytes") && Contains("--shm-size"));
}

TEST_CASE("in a 64 MiB /dev/shm a store and ring that fit together are used to their last MiB",
          "[process]") {
  const auto r = run_in_small_dev_shm({"40", "4096", "36"});
  if (!r.ran) {
    WARN("skipped: " << r.text);
    return;
  }
  INFO("exit " << r.code << ", signal " << r.signal << ": " << r.text);
  CHECK(r.signal == 0);
  CHECK(r.code == 0);
  CHECK_THAT(r.text, Contains("ok"));
}

TEST_CASE("space another program takes from /dev/shm after start-up makes the store's next tensor "
          "an ag::error saying so, not SIGBUS",
          "[process]") {
  const auto r = run_in_small_dev_shm({"40", "4096", "36", "30"});
  if (!r.ran) {
    WARN("skipped: " << r.text);
    return;
  }
  INFO("exit " << r.code << ", signal " << r.signal << ": " << r.text);
  CHECK(r.signal == 0);
  CHECK(r.code == 4);
  CHECK_THAT(r.text, Contains("error: ") && Contains("store full")
                       && Contains("/dev/shm cannot hold the store's pages"));
}
