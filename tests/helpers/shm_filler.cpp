// Fills a process-mode runtime's shared store and ring, for the tests of a small /dev/shm
// (tests/actors/shm_room_test.cpp), which run it in a mount namespace of their own.
//
//   ag-test-shm-filler STORE_MIB RING_KIB FILL_MIB [HOG_MIB]
//
// Starts a runtime over sim:0 on the shared-memory path (ag-runner from $AG_RUNNER) with a store of
// STORE_MIB and a ring of RING_KIB; once it is up, a file of HOG_MIB is written to /dev/shm (space
// another program takes after start-up); then it keeps FILL_MIB of cpu tensors, 1 MiB each, with
// a hundred small operators on sim:0 after each (the ring wraps many times), and reads every one
// back. Prints one line and exits 0 "ok", 3 "refused: WHY" (the runtime did not start) or
// 4 "error: WHY" (an operator or a read failed with ag::error).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: ag-test-shm-filler STORE_MIB RING_KIB FILL_MIB [HOG_MIB]\n");
    return 2;
  }
  const std::size_t mib = std::size_t{1} << 20;
  ag::graph_option opt;
  opt.devices = {ag::device::sim(0)};
  opt.per_device_per_process = true;
  opt.transport = ag::transport::shared_memory;
  opt.store_bytes = std::strtoull(argv[1], nullptr, 10) * mib;
  opt.ring_bytes = std::strtoull(argv[2], nullptr, 10) << 10;
  opt.wait_timeout = std::chrono::seconds{30};
  const long fill = std::atol(argv[3]);
  const long hog = argc == 5 ? std::atol(argv[4]) : 0;
  std::optional<ag::runtime> rt;
  try {
    rt.emplace(opt);
  } catch (const ag::error& e) {
    std::printf("refused: %s\n", e.what());
    return 3;
  }
  const std::string hog_name = "/ag-test-hog-" + std::to_string(::getpid());
  if (hog > 0) {
    const int fd = ::shm_open(hog_name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ::posix_fallocate(fd, 0, static_cast<off_t>(hog * mib)) != 0) {
      std::printf("hog: cannot take %ld MiB of /dev/shm\n", hog);
      return 1;
    }
    ::close(fd);
  }
  int code = 0;
  try {
    std::vector<ag::tensor> kept;
    const auto one = rt->full({16}, 1.0f, ag::device::sim(0));
    auto x = rt->full({16}, 0.0f, ag::device::sim(0));
    for (long i = 0; i < fill; ++i) {
      kept.push_back(rt->full({int64_t(mib / sizeof(float))}, float(i), ag::device::cpu()));
      for (int k = 0; k < 100; ++k)
        x = x + one;
      if (kept.back().to_vector().back() != float(i) || x.to_vector()[0] != float(100 * (i + 1)))
        throw ag::error("wrong value after " + std::to_string(i + 1) + " MiB");
    }
    rt->sync();
    std::printf("ok\n");
  } catch (const ag::error& e) {
    std::printf("error: %s\n", e.what());
    code = 4;
  }
  if (hog > 0)
    ::shm_unlink(hog_name.c_str());
  return code;
}
