// The test runner. With AG_SKIP_WITHOUT_GPU=N in the environment, a run on a machine without a
// CUDA device exits with N at once (ctest's SKIP_RETURN_CODE), so [cuda] tests are reported
// skipped there instead of failing or passing unrun. AG_SKIP_WITHOUT_NETNS=N does the same for
// the [netns] tests where this process may not make network namespaces (or has no ip).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda/kernel_stream.hpp"

namespace {

// Whether a child of this process can enter a network namespace of its own, and ip is there.
bool can_make_netns() {
  if (::access("/usr/sbin/ip", X_OK) != 0)
    return false;
  const pid_t pid = ::fork();
  if (pid == 0)
    ::_exit(::unshare(CLONE_NEWNET) == 0 ? 0 : 1);
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)
         && WEXITSTATUS(status) == 0;
}

} // namespace

int main(int argc, char** argv) {
  if (const char* code = std::getenv("AG_SKIP_WITHOUT_NETNS"); code && !can_make_netns()) {
    std::printf("no network namespaces here: skipped (they need root or CAP_NET_ADMIN)\n");
    return std::atoi(code);
  }
  if (const char* code = std::getenv("AG_SKIP_WITHOUT_GPU"); code && ag::cuda_device_count() == 0) {
    std::printf("no CUDA device visible: skipped (these tests run on the GPU machine)\n");
    return std::atoi(code);
  }
  return Catch::Session().run(argc, argv);
}
