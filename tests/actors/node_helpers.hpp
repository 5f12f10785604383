// Helpers of the node tests: identities made by the real ag-keygen, and ag-node processes on
// 127.0.0.1 (each exec'd, listening on a port the system picks, which it prints), stopped with
// SIGTERM and reaped when the helper goes. Include after catch2/catch.hpp.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

#include "ipc/sub_process.hpp"
#include "tests/actors/process_helpers.hpp"
#include "tests/temp_files.hpp"

namespace ag::test {

// Runs `argv` and waits for it (at most 30 s, ten times that under ThreadSanitizer); its exit
// code, or -1. Its output (stdout and
// stderr) goes to `log`, or is thrown away.
inline int run_program(const std::vector<std::string>& argv, const std::string& log = "/dev/null") {
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (FILE* out = std::fopen(log.c_str(), "w")) {
      ::dup2(::fileno(out), 1);
      if (log != "/dev/null")
        ::dup2(::fileno(out), 2);
    }
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  for (int i = 0; i < 3000 * tsan_slow; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

// Keys for a controller and nodes, in a directory of their own.
struct key_ring {
  temp_dir dir{"keys"};
  std::string make(const std::string& name) {
    REQUIRE(run_program({AG_TEST_KEYGEN, dir.file(name)}) == 0);
    return dir.file(name);
  }
};

// One ag-node, on 127.0.0.1 unless told otherwise.
class node_process {
public:
  // `listen`: the address it listens on; `prefix`: what it is run through (ip netns exec NS).
  node_process(const std::string& name, const std::string& key_base,
               const std::vector<std::string>& allowed_bases, int timeout_ms = 5000 * tsan_slow,
               const std::string& listen = "127.0.0.1",
               const std::vector<std::string>& prefix = {})
    : name_(name), host_(listen) {
    std::string allow;
    for (const auto& a : allowed_bases)
      allow += (allow.empty() ? "" : ",") + a + ".public";
    std::vector<std::string> argv = prefix;
    argv.insert(argv.end(), {AG_TEST_NODE,
                                  "--name=" + name,
                                  "--listen=tcp://" + listen + ":0",
                                  "--key=" + key_base + ".secret",
                                  "--allow=" + allow,
                                  "--runner=" AG_TEST_RUNNER,
                                  "--timeout-ms=" + std::to_string(timeout_ms)});
    int out[2];
    REQUIRE(::pipe(out) == 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlives the test (nor holds ctest's output)
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::close(out[1]);
      std::vector<char*> args;
      for (auto& a : argv)
        args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out[1]);
    // "ag-node NAME: listening on tcp://127.0.0.1:PORT"
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{20};
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd pfd{out[0], POLLIN, 0};
      if (::poll(&pfd, 1, 100) <= 0)
        continue;
      char c;
      if (::read(out[0], &c, 1) != 1)
        break;
      line += c;
    }
    ::close(out[0]);
    const auto colon = line.rfind(':');
    REQUIRE(line.find("listening on tcp://" + listen + ":") != std::string::npos);
    port_ = std::stoi(line.substr(colon + 1));
  }
  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;
  ~node_process() { stop(); }

  pid_t pid() const noexcept { return pid_; }
  int port() const noexcept { return port_; }
  ag::node as_node(const std::string& key_base) const {
    return {name_, "tcp://" + host_ + ":" + std::to_string(port_), key_base + ".public"};
  }

  // The whole machine stops answering: ag-node and every child of it (SIGSTOP), each stopped
  // when this returns true.
  bool freeze() {
    frozen_ = runner_children(pid_);
    frozen_.push_back(pid_);
    for (pid_t p : frozen_)
      if (!stop_process(p))
        return false;
    return true;
  }

  // SIGTERM, then the exit code (SIGKILL and -1 past 20 s).
  int stop() {
    if (pid_ <= 0)
      return code_;
    for (pid_t p : frozen_)
      ::kill(p, SIGCONT);
    ::kill(pid_, SIGTERM);
    code_ = wait(std::chrono::seconds{20});
    return code_;
  }
  // SIGKILL, reaped.
  void kill() {
    if (pid_ <= 0)
      return;
    ::kill(pid_, SIGKILL);
    ::kill(pid_, SIGCONT);
    code_ = wait(std::chrono::seconds{20});
  }

private:
  int wait(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) != pid_) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  std::string name_;
  std::string host_;
  std::vector<pid_t> frozen_;
  pid_t pid_ = -1;
  int port_ = 0;
  int code_ = -1;
};

// A controller of its own process (ag-test-controller start-fails) whose start-up on `node` with
// the identity `key_base` must fail: the error it reported, once its runtime's constructor threw
// (within `limit`), or why none came. Its process is gone when this returns: two controllers in
// one process would share that process's actor system state, sockets and clean-up registry.
inline std::string refused_controller(const ag::node& node, const std::string& key_base,
                                      std::chrono::milliseconds start_timeout,
                                      std::chrono::milliseconds limit) {
  temp_dir dir{"refused"};
  const std::string text = node.name + "=" + node.endpoint + "=" + node.public_key_file;
  ::setenv("AG_TEST_NODE", text.c_str(), 1);
  ::setenv("AG_TEST_KEY", (key_base + ".secret").c_str(), 1);
  ::setenv("AG_TEST_NODE_TIMEOUT_MS", "", 1);
  ::setenv("AG_TEST_START_TIMEOUT_MS", std::to_string(start_timeout.count()).c_str(), 1);
  auto controller = ag::sub_process::spawn(AG_TEST_CONTROLLER, {dir.path(), "1", "start-fails"});
  for (const char* name :
       {"AG_TEST_NODE", "AG_TEST_KEY", "AG_TEST_NODE_TIMEOUT_MS", "AG_TEST_START_TIMEOUT_MS"})
    ::unsetenv(name);
  const auto failed = dir.file("failed");
  std::string out;
  if (within(limit, [&] {
        return ::access(failed.c_str(), F_OK) == 0 || controller.try_wait().has_value();
      })
      && ::access(failed.c_str(), F_OK) == 0) {
    std::ifstream in{failed};
    out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    out = "no failed start-up reported within " + std::to_string(limit.count()) + " ms";
  }
  std::ofstream{dir.file("exit")};
  if (!controller.wait_for(std::chrono::seconds{10}))
    controller.kill_and_reap();
  return out;
}

} // namespace ag::test
