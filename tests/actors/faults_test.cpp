// Faults with real processes on sim devices: a child killed or stopped, a controller killed,
// what dead runtimes leave behind, and runtimes side by side. What the user sees is checked, and
// that nothing is left: no child, no shared memory, no runtime directory.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

#include "ipc/sub_process.hpp"
#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using Catch::Contains;
using namespace std::chrono_literals;

namespace {

ag::graph_option option(int sims, std::chrono::milliseconds timeout) {
  ag::graph_option opt;
  for (int i = 0; i < sims; ++i)
    opt.devices.push_back(ag::device::sim(i));
  opt.per_device_per_process = true;
  opt.store_bytes = std::size_t{64} << 20;
  opt.wait_timeout = timeout;
  opt.transport = transport_under_test();
  return opt;
}

unsigned mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 0777) : 0;
}

} // namespace

TEST_CASE("a child killed mid-run fails its device's work within the deadline, 100 times over",
          "[faults]") {
  const std::vector<float> threes(64, 3.0f);
  for (int round = 0; round < 100; ++round) {
    INFO("round " << round);
    {
      // A 1 s deadline: an error naming the signal proves the death was noticed within it.
      ag::runtime rt{option(2, 1000ms)};
      auto kept = rt.full({64}, 3.0f, ag::device::sim(1)).to(ag::device::cpu());
      REQUIRE(kept.to_vector() == threes);
      auto healthy = rt.full({64}, 2.0f, ag::device::sim(1));
      auto x = rt.full({4096}, 1.0f, ag::device::sim(0));
      for (int i = 0; i < 50; ++i)
        x = x + x;
      const pid_t child = runner_of_lane(1);
      REQUIRE(child > 0);
      ::kill(child, SIGKILL);
      CHECK_THROWS_WITH(x.to_vector(), Contains("sim:0") && Contains("signal 9"));
      CHECK(kept.to_vector() == threes);                                    // acknowledged before
      CHECK((healthy * healthy).to_vector() == std::vector<float>(64, 4.0f)); // the other device
      CHECK_THROWS_WITH(rt.full({1}, 1.0f, ag::device::sim(0)).to_vector(), Contains("sim:0"));
      CHECK_THROWS_WITH(rt.sync(), Contains("sim:0"));
    }
    REQUIRE(runner_children().empty());
    REQUIRE(my_shm().empty());
  }
}

TEST_CASE("a stopped child makes sync and to_vector fail at the deadline naming its device",
          "[faults]") {
  {
    ag::runtime rt{option(2, 1000ms)};
    const pid_t child = runner_of_lane(1);
    REQUIRE(child > 0);
    REQUIRE(stop_process(child));
    auto x = rt.full({8}, 1.0f, ag::device::sim(0));
    CHECK_THROWS_WITH(x.to_vector(), Contains("sim:0") && Contains("1000 ms"));
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:0") && Contains("no acknowledgement"));
    // The other device still answers.
    CHECK(rt.full({2}, 5.0f, ag::device::sim(1)).to_vector() == std::vector<float>{5.0f, 5.0f});
  } // shutdown: the stopped child does not exit by the deadline and is killed
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a stopped child holds submitters back once its queue passes the bound, then is failed "
          "for making no progress while its sibling's work goes on",
          "[faults]") {
  {
    auto opt = option(2, 20000ms);
    opt.max_queued_bytes = 4 << 10; // reached within a few broadcasts
    // Under ThreadSanitizer, beside other tests, the healthy sibling once read nothing for 1 s.
    const auto progress = std::chrono::milliseconds{tsan_slow > 1 ? 3000 : 1000};
    opt.progress_timeout = progress;
    ag::runtime rt{opt};
    const pid_t child = runner_of_lane(1);
    REQUIRE(child > 0);
    REQUIRE(stop_process(child));
    // Work for the other device only; every broadcast still queues for the stopped child.
    auto x = rt.full({16}, 0.0f, ag::device::sim(1));
    const auto one = rt.full({16}, 1.0f, ag::device::sim(1));
    for (int i = 0; i < 20000; ++i) {
      x = x + one;
      if (i % 100 == 99) // keep batches small, so that many broadcasts go out
        (void)x.to_vector();
    }
    CHECK(x.to_vector() == std::vector<float>(16, 20000.0f));
    CHECK_THROWS_WITH(rt.sync(), Contains("sim:0 made no progress for "
                                          + std::to_string(progress.count()) + " ms")
                                   && Contains("its child is killed"));
    CHECK(rt.stats().blocked_submits > 0); // the queue's bound held the submitter back
    CHECK(within(5000ms, [&] { return exited(child); }));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a child inside an operator longer than progress_timeout, with broadcasts waiting behind "
          "it, is left alone on either path",
          "[faults]") {
  for (auto path : {ag::transport::shared_memory, ag::transport::sockets}) {
    INFO((path == ag::transport::sockets ? "sockets" : "shared memory"));
    {
      auto opt = option(2, 300000ms); // the product, under a sanitizer too
      opt.transport = path;
      const auto progress = std::chrono::milliseconds{200 * tsan_slow};
      opt.progress_timeout = progress;
      ag::runtime rt{opt};
      // About a second of sim:0's time, or more; 15 s or so under ThreadSanitizer.
      const int64_t n = tsan_slow > 1 ? 1280 : 2048;
      const auto big = rt.uniform({n, n}, -1, 1, 5, ag::device::sim(0));
      (void)big.to_vector();
      const auto start = std::chrono::steady_clock::now();
      const auto y = ag::matmul(big, big);
      // Meanwhile sim:1's work: every read sends a broadcast that sim:0's child reads only after
      // its product (the watchdog sees it behind, reading nothing).
      std::atomic<bool> done{false};
      std::vector<float> product;
      std::string failure;
      std::thread reader{[&] {
        try {
          product = y.to_vector();
        } catch (const std::exception& e) {
          failure = e.what();
        }
        done = true;
      }};
      auto z = rt.full({16}, 0.0f, ag::device::sim(1));
      int reads = 0;
      while (!(done && reads >= 20)) {
        z = z + 1.0;
        CHECK(z.to_vector() == std::vector<float>(16, static_cast<float>(++reads)));
        std::this_thread::sleep_for(10ms);
      }
      reader.join();
      CHECK(failure.empty());
      const auto took = std::chrono::steady_clock::now() - start;
      INFO("the product took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
                              << " ms");
      REQUIRE(took > 2 * progress); // else this test showed nothing
      CHECK(product.size() == static_cast<std::size_t>(n * n));
      CHECK_NOTHROW(rt.sync());
      CHECK((rt.full({2}, 1.0f, ag::device::sim(0)) + 1.0).to_vector()
            == std::vector<float>{2.0f, 2.0f});
    }
    CHECK(runner_children().empty());
    CHECK(my_shm().empty());
  }
}

namespace {

// A file in /dev/shm as the CUDA driver names one for a process's interprocess events.
std::string cuda_ipc_file(const std::string& uid, const std::string& pid, const std::string& n) {
  return "/dev/shm/cuda.shm." + uid + "." + pid + "." + n;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

void plant(const std::string& path) { std::ofstream{path} << "x"; }

} // namespace

TEST_CASE("the proxy that reaps a child killed by a signal removes that child's CUDA IPC files in "
          "/dev/shm, and nothing else",
          "[faults]") {
  const std::string uid = std::to_string(::getuid());
  std::vector<std::string> kept;
  {
    ag::runtime rt{option(2, 1000ms)};
    const pid_t killed = runner_of_lane(1);
    const pid_t exits = runner_of_lane(2);
    REQUIRE(killed > 0);
    REQUIRE(exits > 0);
    char hex[32]; // the driver writes the pid in hex
    std::snprintf(hex, sizeof hex, "%x", static_cast<unsigned>(killed));
    const std::string k = hex;
    const std::vector<std::string> its{cuda_ipc_file(uid, k, "1"), cuda_ipc_file(uid, k, "2")};
    for (const auto& f : its)
      plant(f);
    kept = {cuda_ipc_file(uid, k + "0", "1"),   // another pid that begins alike
            cuda_ipc_file(uid, k, "1x"),        // not the driver's shape
            cuda_ipc_file(uid + "9", k, "1"),   // another user's name
            cuda_ipc_file(uid, std::to_string(exits), "1")}; // a child that exits in order
    for (const auto& f : kept)
      plant(f);
    const std::string link = cuda_ipc_file(uid, k, "3"); // a link: never followed or removed
    REQUIRE(::symlink(kept[0].c_str(), link.c_str()) == 0);
    kept.push_back(link);
    ::kill(killed, SIGKILL);
    auto x = rt.full({4}, 1.0f, ag::device::sim(0));
    CHECK_THROWS_WITH(x.to_vector(), Contains("sim:0") && Contains("signal 9"));
    CHECK(within(5000ms, [&] { return !exists(its[0]) && !exists(its[1]); }));
  } // the other child exits in order: its file is the driver's business, not the proxy's
  for (const auto& f : kept) {
    CHECK(exists(f));
    ::unlink(f.c_str());
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a controller killed with SIGKILL, alone or with its children, leaves nothing in "
          "/dev/shm or TMPDIR, with no later runtime to sweep",
          "[faults]") {
  const bool together = GENERATE(false, true);
  INFO((together ? "the controller and its children at once" : "the controller alone"));
  private_tmpdir tmp;
  auto controller = ag::sub_process::spawn(beside_this_program("ag-test-controller",
                                                               AG_TEST_CONTROLLER),
                                           {tmp.path, "2"});
  const pid_t dead = controller.pid();
  REQUIRE(within(20000ms, [&] { return ::access((tmp.path + "/ready").c_str(), F_OK) == 0; }));
  const auto children = runner_children(dead);
  REQUIRE(children.size() == 2);
  CHECK(my_shm(dead).empty()); // nothing has a name even while it runs
  controller.kill(SIGKILL);
  if (together)
    for (pid_t c : children)
      ::kill(c, SIGKILL);
  REQUIRE(controller.wait_for(5000ms));
  CHECK(all_exited_within(2000ms, children)); // their parent's death ends them (or the kill)
  CHECK(my_shm(dead).empty());
  ::unlink((tmp.path + "/ready").c_str());
  CHECK(list_dir(tmp.path).empty());
}

TEST_CASE("with stop signals installed, SIGTERM or SIGINT to a controller removes its children at "
          "once, leaving nothing",
          "[faults]") {
  for (const int sig : {SIGTERM, SIGINT}) {
    INFO("signal " << sig);
    private_tmpdir tmp;
    auto controller = ag::sub_process::spawn(beside_this_program("ag-test-controller",
                                                                 AG_TEST_CONTROLLER),
                                             {tmp.path, "2", "stop-signals"});
    const pid_t pid = controller.pid();
    REQUIRE(within(20000ms, [&] { return ::access((tmp.path + "/ready").c_str(), F_OK) == 0; }));
    const auto children = runner_children(pid);
    REQUIRE(children.size() == 2);
    controller.kill(sig);
    const auto& status = controller.wait_for(5000ms);
    REQUIRE(status);
    CHECK(status->signal == sig); // it still ends by the signal, as without the handler
    CHECK(all_exited_within(2000ms, children));
    CHECK(my_shm(pid).empty());
    ::unlink((tmp.path + "/ready").c_str());
    CHECK(list_dir(tmp.path).empty());
  }
}

TEST_CASE("two runtimes side by side have their own endpoints, which no other user may connect "
          "to, and nothing named on disk",
          "[faults]") {
  private_tmpdir tmp;
  ag::runtime first{option(1, 20000ms)};
  ag::runtime second{option(1, 20000ms)};
  CHECK(list_dir(tmp.path).empty());
  CHECK(my_shm().empty());
  const auto endpoints = abstract_endpoints(::getpid());
  CHECK(endpoints.size() == 4); // pub and pull of each
  for (const auto& e : endpoints) {
    INFO(e);
    CHECK(greets(e, ::getuid()) == "greeting"); // ZMTP's first byte
    if (::geteuid() == 0)
      CHECK(greets(e, 65534) == "closed"); // nobody: refused before a byte
  }
  if (::geteuid() != 0)
    WARN("not root: another user's connection was not tried");
  auto a = first.full({4}, 1.0f, ag::device::sim(0));
  auto b = second.full({4}, 2.0f, ag::device::sim(0));
  CHECK((a + a).to_vector() == std::vector<float>(4, 2.0f));
  CHECK((b + b).to_vector() == std::vector<float>(4, 4.0f));
}

TEST_CASE("a runner_path that is not executable fails start-up naming it", "[faults]") {
  private_tmpdir tmp;
  const std::string path = tmp.path + "/not-executable";
  if (FILE* f = std::fopen(path.c_str(), "w"))
    std::fclose(f);
  auto opt = option(1, 20000ms);
  opt.runner_path = path;
  CHECK_THROWS_WITH(ag::runtime{opt}, Contains(path) && Contains("not an executable"));
  ::unlink(path.c_str());
  CHECK(my_shm().empty());
}
