// A runtime's life from start to end as users see it: destroyed on another thread, waits that end
// when it is destroyed, "no deadline" durations, device kinds out of range, a child's exit code at
// shutdown, and a message-id gap that fails only its lane.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <fstream>
#include <future>
#include <iostream>
#include <sstream>
#include <thread>

#include <sys/stat.h>

#include <actorgraph/actorgraph.hpp>

#include "ipc/wire.hpp"
#include "ipc/zmq_sockets.hpp"
#include "tests/actors/process_helpers.hpp"

using namespace ag::test;
using namespace std::chrono_literals;
using Catch::Contains;

namespace {

ag::graph_option option(bool process, const char* devices = "sim:0,sim:1") {
  return sim_options(process, devices, 20s);
}

// What the code under test writes to std::cerr while this lives.
class cerr_capture {
public:
  cerr_capture() : old_(std::cerr.rdbuf(out_.rdbuf())) {}
  ~cerr_capture() { std::cerr.rdbuf(old_); }
  std::string str() const { return out_.str(); }

private:
  std::ostringstream out_;
  std::streambuf* old_;
};

} // namespace

TEST_CASE("a runtime destroyed on another thread than the one that built it ends in time",
          "[lifecycle][process]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  {
    auto rt = std::make_unique<ag::runtime>(option(process));
    auto x = rt->full({8}, 2.0f, ag::device::sim(0));
    CHECK((x * x).to(ag::device::cpu()).to_vector() == std::vector<float>(8, 4.0f));
    // This thread made scoped actors and spawned the system: it stays alive meanwhile.
    auto done = std::async(std::launch::async, [&] { rt.reset(); });
    REQUIRE(done.wait_for(30s) == std::future_status::ready);
    CHECK_THROWS_WITH(x.to_vector(), Contains("outlived its runtime"));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("a runtime built on a worker thread is destroyed on the main thread", "[lifecycle]") {
  std::unique_ptr<ag::runtime> rt;
  std::thread([&] {
    rt = std::make_unique<ag::runtime>(option(false));
    rt->sync();
  }).join();
  auto done = std::async(std::launch::async, [&] { rt.reset(); });
  REQUIRE(done.wait_for(30s) == std::future_status::ready);
}

TEST_CASE("a thread still waiting on a runtime being destroyed gets an error saying so",
          "[lifecycle][process]") {
  auto opt = option(true, "sim:0");
  opt.wait_timeout = 1500ms;
  opt.progress_timeout = std::chrono::milliseconds::max();
  {
    auto rt = std::make_unique<ag::runtime>(opt);
    auto x = rt->full({8}, 1.0f, ag::device::sim(0));
    rt->sync();
    const pid_t child = runner_of_lane(1);
    REQUIRE(child > 0);
    REQUIRE(stop_process(child));
    auto pending = x + x; // work the stopped child will not acknowledge
    // The destructor waits for it (up to 1.5 s), then stops the runtime; the read begun meanwhile
    // is answered then, before its own deadline.
    auto destroyer = std::async(std::launch::async, [&] { rt.reset(); });
    std::this_thread::sleep_for(500ms);
    CHECK_THROWS_WITH(x.to(ag::device::cpu()).to_vector(),
                      Contains("the runtime was destroyed while it waited"));
    REQUIRE(destroyer.wait_for(30s) == std::future_status::ready);
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}

TEST_CASE("milliseconds::max() is no deadline for every timeout option", "[lifecycle][process]") {
  const bool process = GENERATE(false, true);
  INFO((process ? "process mode" : "thread mode"));
  auto opt = option(process);
  opt.wait_timeout = std::chrono::milliseconds::max();
  opt.start_timeout = std::chrono::milliseconds::max();
  opt.progress_timeout = std::chrono::milliseconds::max();
  cerr_capture err;
  {
    ag::runtime rt{opt};
    auto x = rt.full({4}, 3.0f, ag::device::sim(1));
    for (int i = 0; i < 100; ++i)
      x = x + x;
    rt.sync();
    CHECK(x.to(ag::device::cpu()).to_vector() == std::vector<float>(4, 3.0f * std::pow(2.0f, 100.0f)));
  }
  CHECK(err.str().find("killed") == std::string::npos);
  CHECK(err.str().find("deadline") == std::string::npos);
  CHECK(runner_children().empty());
}

TEST_CASE("a non-positive timeout or a device kind out of range is refused in both modes",
          "[lifecycle][process]") {
  const bool process = GENERATE(false, true);
  auto opt = option(process);
  opt.progress_timeout = 0ms;
  CHECK_THROWS_WITH(ag::runtime{opt}, Contains("progress_timeout"));
  opt = option(process);
  opt.devices = {ag::device{static_cast<ag::device::kind>(7), 0}};
  CHECK_THROWS_WITH(ag::runtime{opt}, Contains("device kind 7"));
  CHECK(my_shm().empty());
}

TEST_CASE("a child's non-zero exit code at an orderly shutdown is reported",
          "[lifecycle][process]") {
  private_tmpdir tmp;
  const std::string script = tmp.path + "/runner-exits-7";
  {
    std::ofstream f{script};
    f << "#!/bin/sh\n"
      << "export ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0\"\n"
      << "LD_PRELOAD=" << AG_TEST_EXIT7_PRELOAD << " exec "
      << beside_this_program("ag-runner", AG_TEST_RUNNER) << " \"$@\"\n";
  }
  ::chmod(script.c_str(), 0700);
  auto opt = option(true, "sim:0");
  opt.runner_path = script;
  cerr_capture err;
  {
    ag::runtime rt{opt};
    CHECK(rt.full({2}, 1.0f, ag::device::sim(0)).to(ag::device::cpu()).to_vector()
          == std::vector<float>{1.0f, 1.0f});
  }
  CHECK_THAT(err.str(), Contains("shutdown") && Contains("sim:0") && Contains("exited with code 7"));
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
  ::unlink(script.c_str()); // else the private directory cannot go
}

TEST_CASE("a message-id gap from one child fails only that child's device", "[lifecycle][process]") {
  private_tmpdir tmp;
  {
    ag::runtime rt{option(true)};
    std::string pull; // its children's reports come here (an abstract endpoint)
    for (const auto& e : abstract_endpoints(::getpid()))
      if (e.size() > 5 && e.compare(e.size() - 5, 5, "/pull") == 0)
        pull = e;
    REQUIRE(!pull.empty());
    auto x = rt.full({4}, 1.0f, ag::device::sim(0));
    REQUIRE(x.to(ag::device::cpu()).to_vector() == std::vector<float>(4, 1.0f));
    {
      zmq::context_t ctx{1};
      auto push = ag::zmqs::pusher(ctx, "ipc://" + pull);
      ag::wire::received_msg forged{1, 0};
      ag::zmqs::send(push, {ag::wire::msg_type::received, 999999}, ag::wire::encode(forged));
    }
    std::string why; // the forged message is read by the puller at some point: poll for it
    for (int i = 0; i < 500 && why.empty(); ++i) {
      try {
        rt.sync();
        std::this_thread::sleep_for(10ms);
      } catch (const ag::error& e) {
        why = e.what();
      }
    }
    CHECK_THAT(why, Contains("sim:0") && Contains("gap"));
    CHECK_THROWS_WITH(x.to(ag::device::cpu()).to_vector(), Contains("sim:0"));
    // sim:1 goes on
    CHECK(rt.full({3}, 2.0f, ag::device::sim(1)).to(ag::device::cpu()).to_vector()
          == std::vector<float>(3, 2.0f));
  }
  CHECK(runner_children().empty());
  CHECK(my_shm().empty());
}
