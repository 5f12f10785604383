// The test runner. With AG_SKIP_WITHOUT_GPU=N in the environment, a run on a machine without a
// CUDA device exits with N at once (ctest's SKIP_RETURN_CODE), so [cuda] tests are reported
// skipped there instead of failing or passing unrun.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "cuda/kernel_stream.hpp"

int main(int argc, char** argv) {
  if (const char* code = std::getenv("AG_SKIP_WITHOUT_GPU"); code && ag::cuda_device_count() == 0) {
    std::printf("no CUDA device visible: skipped (these tests run on the GPU machine)\n");
    return std::atoi(code);
  }
  return Catch::Session().run(argc, argv);
}
