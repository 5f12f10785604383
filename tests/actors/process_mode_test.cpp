// Process mode with real children (ag-runner), real sockets and real shared memory on sim
// devices: the same programs give bit-identical results in both modes, children start and stop,
// and nothing is left behind.
#include <catch2/catch.hpp>

#include <csignal>
#include <limits>
#include <cstdlib>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"
#include "tests/actors/random_program.hpp"

using namespace ag::test;

namespace {

ag::graph_option option(int sims, bool process) {
  ag::graph_option opt;
  for (int i = 0; i < sims; ++i)
    opt.devices.push_back(ag::device::sim(i));
  opt.per_device_per_process = process;
  opt.store_bytes = std::size_t{256} << 20;
  opt.wait_timeout = std::chrono::seconds{30};
  opt.transport = transport_under_test();
  return opt;
}

} // namespace

TEST_CASE("200 random programs over 1 to 4 sim devices give bit-identical results in thread "
          "and process mode",
          "[process]") {
  int programs = 0;
  for (int sims = 1; sims <= 4; ++sims) {
    ag::runtime threads{option(sims, false)};
    ag::runtime processes{option(sims, true)};
    for (int i = 0; i < 50; ++i, ++programs) {
      const uint32_t seed = static_cast<uint32_t>(1000 * sims + i);
      INFO("devices sim:0..sim:" << sims - 1 << ", program seed " << seed);
      const auto t = ag::test::run_random_program(threads, seed, 40);
      const auto p = ag::test::run_random_program(processes, seed, 40);
      REQUIRE(t.values.size() == p.values.size());
      for (std::size_t v = 0; v < t.values.size(); ++v) {
        CHECK(ag::test::same_bits(t.values[v], p.values[v]));
        CHECK(ag::test::same_bits(p.values[v], p.reference[v]));
      }
    }
    threads.sync();
    processes.sync();
    CHECK(processes.stats().store_live_bytes == 0);
    CHECK(processes.stats().device_live_bytes == 0);
  }
  CHECK(programs >= 200);
}

TEST_CASE("process mode starts one ag-runner per device and stops them all, leaving nothing",
          "[process]") {
  private_tmpdir tmp;
  REQUIRE(runner_children().empty());
  {
    ag::runtime rt{option(4, true)};
    CHECK(runner_children().size() == 4);
    // Nothing of it has a name while it runs: its store, channel and start-up segments lost
    // theirs once made (the children inherit descriptors), and its endpoints are abstract.
    CHECK(my_shm().empty());
    CHECK(list_dir(tmp.path).empty());
    auto a = rt.full({1000}, 2.0f, ag::device::sim(3));
    CHECK((a * a).to(ag::device::sim(0)).to_vector() == std::vector<float>(1000, 4.0f));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
  CHECK(list_dir(tmp.path).empty());
}

TEST_CASE("a child killed with SIGKILL fails the work of its device with an error naming it",
          "[process]") {
  {
    ag::runtime rt{option(2, true)};
    auto kept = rt.full({8}, 1.5f, ag::device::sim(1)).to(ag::device::cpu());
    CHECK(kept.to_vector() == std::vector<float>(8, 1.5f));
    auto children = runner_children();
    REQUIRE(children.size() == 2);
    auto x = rt.full({8}, 1.0f, ag::device::sim(0));
    rt.sync();
    // Which child runs sim:0 is not known here: kill both, then check the error names a device
    // and the signal.
    for (auto pid : children)
      ::kill(pid, SIGKILL);
    try {
      (x + x).to_vector();
      FAIL("reading from a killed child succeeded");
    } catch (const ag::error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("sim:"));
      CHECK_THAT(what, Catch::Contains("signal 9"));
    }
    CHECK_THROWS_AS(rt.sync(), ag::error);
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("fill values keep every bit through the wire: -0, NaN, infinities, subnormals",
          "[process]") {
  ag::runtime rt{option(1, true)};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const float v : {-0.0f, nan, inf, -inf, 1e-40f, std::numeric_limits<float>::max()}) {
    INFO("value " << v);
    const auto got = rt.full({3}, v, ag::device::sim(0)).to_vector();
    CHECK(ag::test::same_bits(got, std::vector<float>(3, v)));
  }
}

TEST_CASE("a child that exits at once fails start-up with an error naming its device and code",
          "[process]") {
  private_tmpdir tmp;
  auto opt = option(2, true);
  opt.runner_path = "/bin/false";
  try {
    ag::runtime rt{opt};
    FAIL("start-up succeeded with /bin/false as the runner");
  } catch (const ag::error& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("sim:"));
    CHECK_THAT(what, Catch::Contains("exited with code 1"));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
  CHECK(list_dir(tmp.path).empty());
}

TEST_CASE("a child that never starts fails start-up at the deadline, and is killed", "[process]") {
  private_tmpdir tmp;
  const std::string script = tmp.path + "/silent-runner";
  {
    FILE* f = std::fopen(script.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("#!/bin/sh\nexec sleep 60\n", f);
    std::fclose(f);
    ::chmod(script.c_str(), 0700);
  }
  auto opt = option(1, true);
  opt.runner_path = script;
  opt.start_timeout = std::chrono::milliseconds{1500};
  CHECK_THROWS_WITH(ag::runtime{opt},
                    Catch::Contains("sim:0") && Catch::Contains("within 1500 ms"));
  CHECK(my_shm().empty());
  ::unlink(script.c_str());
  CHECK(list_dir(tmp.path).empty());
}
