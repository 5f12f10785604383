// Makes N process-mode runtimes over sim:0,sim:1, all alive at once, and runs an add on each, for
// the tests of a low descriptor limit (tests/actors/descriptor_limit_test.cpp), which run it under
// a small RLIMIT_NOFILE.
//
//   ag-test-many-runtimes N
//
// Prints one line and exits 0 "ok N", or 3 "refused at K: WHY" (runtime K, from 1, did not start;
// those before it are destroyed in order), or 4 "error: WHY" (an operator failed).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include <actorgraph/actorgraph.hpp>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ag-test-many-runtimes N\n");
    return 2;
  }
  const int n = std::atoi(argv[1]);
  ag::graph_option opt;
  opt.devices = ag::parse_devices("sim:0,sim:1");
  opt.per_device_per_process = true;
  opt.store_bytes = std::size_t{16} << 20;
  opt.wait_timeout = std::chrono::seconds{30};
  std::vector<std::unique_ptr<ag::runtime>> runtimes;
  for (int k = 1; k <= n; ++k) {
    try {
      runtimes.push_back(std::make_unique<ag::runtime>(opt));
    } catch (const ag::error& e) {
      std::printf("refused at %d: %s\n", k, e.what());
      std::fflush(stdout);
      return 3;
    }
  }
  try {
    for (auto& rt : runtimes) {
      const auto x = rt->full({4}, 1.0f, ag::device::sim(1)) + rt->full({4}, 2.0f, ag::device::sim(1));
      if (x.to_vector() != std::vector<float>(4, 3.0f))
        throw ag::error("wrong sum");
    }
  } catch (const ag::error& e) {
    std::printf("error: %s\n", e.what());
    return 4;
  }
  std::printf("ok %d\n", n);
  return 0;
}
