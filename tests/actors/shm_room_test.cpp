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

constexpr int skipped = 77;

struct outcome {
  bool ran = false; // false: a small /dev/shm could not be made here (why in `text`)
  int code = -1;    // the filler's exit code, or -1
  int signal = 0;   // the signal that ended it, or 0
  std::string text;
};

// Runs ag-test-shm-filler ARGS in a private mount namespace whose /dev/shm is a 64 MiB tmpfs.
outcome run_in_small_dev_shm(const std::vector<std::string>& args) {
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto give_up = [&](const std::string& why) {
      (void)!::write(pipe_fds[1], why.data(), why.size());
      ::_exit(skipped);
    };
    if (::geteuid() != 0)
      give_up("not root: mounting a tmpfs on /dev/shm needs root");
    if (::unshare(CLONE_NEWNS) != 0)
      give_up(std::string{"unshare(CLONE_NEWNS): "} + std::strerror(errno));
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      give_up(std::string{"making / private: "} + std::strerror(errno));
    if (::mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777") != 0)
      give_up(std::string{"mounting a 64 MiB tmpfs: "} + std::strerror(errno));
    ::dup2(pipe_fds[1], 1);
    ::dup2(pipe_fds[1], 2);
    std::signal(SIGBUS, SIG_DFL);
    ::setenv("AG_RUNNER", AG_TEST_RUNNER, 1);
    std::vector<char*> argv{const_cast<char*>(AG_TEST_SHM_FILLER)};
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  outcome out;
  out.text = read_until_closed(pipe_fds[0], deadline);
  ::close(pipe_fds[0]);
  int status = 0;
  pid_t reaped = 0;
  while ((reaped = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  if (reaped == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    out.text += " (killed: it did not finish within 120 s)";
  }
  out.ran = !(WIFEXITED(status) && WEXITSTATUS(status) == skipped);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return out;
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
