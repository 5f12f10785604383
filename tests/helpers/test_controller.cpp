// A controller for the tests of controller death and of stop signals: starts a process-mode runtime
// over N sim devices, writes DIR/ready once every child is ready, then keeps work flowing until it
// is killed.
//
//   ag-test-controller DIR N [stop-signals | app-handlers | start-fails]
//
// stop-signals: ag::install_stop_signals() first. app-handlers: the application's own handlers
// first (a plain one for SIGTERM, an SA_SIGINFO one for SIGINT), then ag::install_stop_signals();
// a handler that runs creates DIR/handled-plain-SIG or DIR/handled-siginfo-SIG and the program
// then exits with code 0, by itself. With $AG_TEST_NODE (NAME=tcp://HOST:PORT=PUBLIC_FILE) and
// $AG_TEST_KEY (the controller's .secret), its N devices are that node's NAME/sim:0..N-1;
// $AG_TEST_NODE_TIMEOUT_MS sets graph_option::node_timeout (1000 when unset, empty for the
// default) and $AG_TEST_START_TIMEOUT_MS graph_option::start_timeout.
// start-fails: the runtime is expected not to start. Once its constructor throws, the program
// writes DIR/failed: "WALL_MS CPU_MS" (the time the constructor took, and the CPU time, user and
// system, this process used meanwhile) on the first line, the error after it; then it lives on,
// holding whatever the failed runtime left it (the test looks), until DIR/exit appears or 30 s
// pass, and exits with code 0. A runtime that starts: code 1.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"

namespace {

volatile std::sig_atomic_t handled = 0;
char plain_file[512];   // DIR/handled-plain-15
char siginfo_file[512]; // DIR/handled-siginfo-2

void touch(const char* path) { // async-signal-safe
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0)
    ::close(fd);
}

extern "C" void plain_handler(int) {
  touch(plain_file);
  handled = 1;
}

extern "C" void siginfo_handler(int, siginfo_t* info, void*) {
  if (info != nullptr && info->si_signo == SIGINT) // the siginfo reached the handler
    touch(siginfo_file);
  handled = 1;
}

void install_app_handlers(const std::string& dir) {
  std::snprintf(plain_file, sizeof plain_file, "%s/handled-plain-%d", dir.c_str(), SIGTERM);
  std::snprintf(siginfo_file, sizeof siginfo_file, "%s/handled-siginfo-%d", dir.c_str(), SIGINT);
  struct sigaction plain {};
  plain.sa_handler = plain_handler;
  sigemptyset(&plain.sa_mask);
  ::sigaction(SIGTERM, &plain, nullptr);
  struct sigaction info {};
  info.sa_sigaction = siginfo_handler;
  info.sa_flags = SA_SIGINFO;
  sigemptyset(&info.sa_mask);
  ::sigaction(SIGINT, &info, nullptr);
}

// The CPU time, user and system, this process has used.
std::chrono::milliseconds cpu_time() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  using namespace std::chrono;
  return duration_cast<milliseconds>(seconds{ru.ru_utime.tv_sec + ru.ru_stime.tv_sec}
                                     + microseconds{ru.ru_utime.tv_usec + ru.ru_stime.tv_usec});
}

std::chrono::milliseconds env_ms(const char* name, std::chrono::milliseconds otherwise) {
  const char* text = std::getenv(name);
  return text != nullptr && *text ? std::chrono::milliseconds{std::atol(text)} : otherwise;
}

// start-fails: the runtime's constructor, timed; DIR/failed once it throws.
int start_fails(const std::string& dir, const ag::graph_option& opt) {
  using namespace std::chrono;
  const auto t0 = steady_clock::now();
  const auto cpu0 = cpu_time();
  std::string why;
  try {
    ag::runtime rt{opt};
  } catch (const std::exception& e) {
    why = e.what();
  }
  const auto wall = duration_cast<milliseconds>(steady_clock::now() - t0);
  const auto cpu = cpu_time() - cpu0;
  if (why.empty())
    return 1;
  const std::string tmp = dir + "/failed.tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%lld %lld\n%s\n", static_cast<long long>(wall.count()),
                 static_cast<long long>(cpu.count()), why.c_str());
    std::fclose(f);
    ::rename(tmp.c_str(), (dir + "/failed").c_str());
  }
  for (int i = 0; i < 3000 && ::access((dir + "/exit").c_str(), F_OK) != 0; ++i)
    std::this_thread::sleep_for(milliseconds{10});
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 4 ? argv[3] : "";
  if ((argc != 3 && argc != 4)
      || (argc == 4 && mode != "stop-signals" && mode != "app-handlers" && mode != "start-fails")) {
    std::fprintf(stderr,
                 "usage: ag-test-controller DIR N [stop-signals | app-handlers | start-fails]\n");
    return 2;
  }
  const std::string dir = argv[1];
  if (mode == "app-handlers")
    install_app_handlers(dir);
  if (mode == "stop-signals" || mode == "app-handlers")
    ag::install_stop_signals();
  const int n = std::atoi(argv[2]);
  ag::graph_option opt;
  std::string node_name;
  if (const char* node = std::getenv("AG_TEST_NODE"); node && *node) {
    const std::string text = node;
    const auto first = text.find('=');
    const auto last = text.rfind('=');
    node_name = text.substr(0, first);
    opt.nodes = {{node_name, text.substr(first + 1, last - first - 1), text.substr(last + 1)}};
    opt.key_file = std::getenv("AG_TEST_KEY") ? std::getenv("AG_TEST_KEY") : "";
    const char* timeout = std::getenv("AG_TEST_NODE_TIMEOUT_MS");
    opt.node_timeout = timeout == nullptr ? std::chrono::milliseconds{1000 * ag::test::tsan_slow}
                                          : env_ms("AG_TEST_NODE_TIMEOUT_MS", opt.node_timeout);
  }
  opt.start_timeout = env_ms("AG_TEST_START_TIMEOUT_MS", opt.start_timeout);
  for (int i = 0; i < n; ++i)
    opt.devices.push_back(ag::device::sim(i).on(node_name));
  opt.per_device_per_process = true;
  opt.store_bytes = std::size_t{64} << 20;
  opt.transport = ag::test::transport_under_test(); // the tests' $AG_TEST_TRANSPORT, inherited
  if (mode == "start-fails")
    return start_fails(dir, opt);
  ag::runtime rt{opt};
  if (FILE* f = std::fopen((dir + "/ready").c_str(), "w"))
    std::fclose(f);
  auto x = rt.full({1024}, 1.0f, opt.devices.front());
  while (!handled) { // until killed, or an application handler ran
    try {
      x = x + x;
      rt.sync();
    } catch (const std::exception&) {
      // The stop-signal clean-up killed the children before the application's handler ran.
    }
  }
  return 0;
}
