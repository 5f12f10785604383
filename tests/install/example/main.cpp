// An application outside the project: the public API as documented, against the installed package,
// in thread mode and in process mode (one installed ag-runner child per device, found with no
// configuration). Both must give the same bits and leave nothing behind.
#include <actorgraph/actorgraph.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dirent.h>
#include <unistd.h>

namespace {

struct results {
  std::vector<float> c, m;
  float sum = 0;
};

results run(bool process) {
  std::vector<float> values(4096);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = 1.0f + static_cast<float>(i % 7);
  std::vector<float> xs(8 * 16, 0.5f), ws(16 * 4, -0.25f);

  ag::graph_option opt;                                   // devices empty = "auto"
  opt.devices = ag::parse_devices("sim:0,sim:1");
  opt.per_device_per_process = process;
  ag::runtime rt{opt};                                    // every runner ready when this returns
  ag::tensor a = rt.full({4096}, 1.0f, ag::device::sim(0));
  ag::tensor b = rt.from_vector({4096}, values, ag::device::sim(0));
  ag::tensor c = (a + b) * a - b / a;                     // elementwise, same shape and device
  ag::tensor x = rt.from_vector({8, 16}, xs, ag::device::sim(1));
  ag::tensor w = rt.from_vector({16, 4}, ws, ag::device::sim(1));
  ag::tensor m = x.matmul(w).relu();                      // 2-D float32 matmul, relu
  ag::tensor s = c.sum();                                 // shape {}
  ag::tensor d = c.to(ag::device::cpu());                 // explicit moves
  std::vector<float> v = d.to_vector();                   // waits for the result
  rt.sync();                                              // waits for all submitted work
  try {
    auto bad = a + x; // different shapes and devices
    (void)bad;
    std::printf("mismatched operands were accepted\n");
    std::exit(1);
  } catch (const ag::error& e) {
    std::printf("rejected as expected: %s\n", e.what());
  }
  return {v, m.to_vector(), s.to_vector().at(0)};
}

// What this process could have left: shared memory named after its pid, child processes.
std::size_t leftovers() {
  std::size_t n = 0;
  const std::string prefix = "ag-" + std::to_string(::getpid()) + "-";
  if (DIR* d = ::opendir("/dev/shm")) {
    while (dirent* e = ::readdir(d))
      n += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
    ::closedir(d);
  }
  return n;
}

} // namespace

int main() {
  const results t = run(false);
  const results p = run(true);
  // (1 + b) * 1 - b / 1 == 1 for every element; x w = 16 * 0.5 * -0.25 = -2, relu 0.
  for (float e : t.c)
    if (e != 1.0f) {
      std::printf("c = %f, expected 1\n", e);
      return 1;
    }
  if (t.sum != 4096.0f || t.m != std::vector<float>(32, 0.0f)) {
    std::printf("sum %f (expected 4096) or m wrong\n", t.sum);
    return 1;
  }
  if (std::memcmp(t.c.data(), p.c.data(), t.c.size() * 4) != 0 || t.m != p.m || t.sum != p.sum) {
    std::printf("thread and process mode differ\n");
    return 1;
  }
  if (const auto n = leftovers(); n != 0) {
    std::printf("%zu shared-memory objects left behind\n", n);
    return 1;
  }
  std::printf("example: thread and process mode agree: c[0] = %g, sum = %g, m = [%zu]\n", t.c[0],
              t.sum, t.m.size());
  return 0;
}
