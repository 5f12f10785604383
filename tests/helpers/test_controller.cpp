// A controller for the tests of controller death: starts a process-mode runtime over N sim
// devices, writes DIR/ready once every child is ready, then keeps work flowing until it is killed.
// With a third argument "stop-signals" it installs ag::install_stop_signals() first.
//
//   ag-test-controller DIR N [stop-signals]
#include <cstdio>
#include <cstdlib>
#include <string>

#include <actorgraph/actorgraph.hpp>

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: ag-test-controller DIR N [stop-signals]\n");
    return 2;
  }
  if (argc == 4 && std::string{argv[3]} == "stop-signals")
    ag::install_stop_signals();
  const std::string dir = argv[1];
  const int n = std::atoi(argv[2]);
  ag::graph_option opt;
  for (int i = 0; i < n; ++i)
    opt.devices.push_back(ag::device::sim(i));
  opt.per_device_per_process = true;
  opt.store_bytes = std::size_t{64} << 20;
  ag::runtime rt{opt};
  if (FILE* f = std::fopen((dir + "/ready").c_str(), "w"))
    std::fclose(f);
  auto x = rt.full({1024}, 1.0f, ag::device::sim(0));
  for (;;) { // until killed
    x = x + x;
    rt.sync();
  }
}
