// A node endpoint that accepts connections and never answers (an ag-node that hangs, a port some
// other program holds) or closes them at once: start-up gives it up by start_timeout with an
// ag::error naming it, without spinning a core, and leaves no connection, store or directory
// behind. The endpoints are real listeners on 127.0.0.1; the silent ones are asked by controllers
// in processes of their own (ag-test-controller), whose CPU time and leftovers the tests read.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include <actorgraph/actorgraph.hpp>

#include "ipc/leftovers.hpp"
#include "ipc/sub_process.hpp"
#include "tests/actors/node_helpers.hpp"
#include "tests/actors/process_helpers.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;

namespace {

// A TCP listener on 127.0.0.1, on a port the system picks, that accepts every connection and
// writes nothing: it keeps each one open until its peer closes it, counting both, or
// (close_at_once) closes it at once. tls_once: the first connection gets a complete TLS handshake
// as the node's identity (an ag-node that answers once, then hangs) and is then kept like the
// others. It stops by itself after a minute, or when it goes.
class silent_listener {
public:
  enum class kind { silent, close_at_once, tls_once };

  explicit silent_listener(kind k, const std::string& node_key = {}) : kind_(k) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof at;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
    REQUIRE(::listen(fd_, 1024) == 0);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&at), &len) == 0);
    port_ = ntohs(at.sin_port);
    if (k == kind::tls_once) {
      tls_ = SSL_CTX_new(TLS_server_method());
      REQUIRE(tls_ != nullptr);
      REQUIRE(SSL_CTX_use_certificate_chain_file(tls_, (node_key + ".public").c_str()) == 1);
      REQUIRE(SSL_CTX_use_PrivateKey_file(tls_, (node_key + ".secret").c_str(), SSL_FILETYPE_PEM)
              == 1);
    }
    thread_ = std::thread{[this] { run(); }};
  }
  silent_listener(const silent_listener&) = delete;
  silent_listener& operator=(const silent_listener&) = delete;
  ~silent_listener() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
    if (tls_ != nullptr)
      SSL_CTX_free(tls_);
  }

  std::string endpoint() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  int accepted() const noexcept { return accepted_; }
  int open() const noexcept { return accepted_ - closed_; } // not closed by their peer yet

private:
  void run() {
    // The handshake's last writes (TLS 1.3's session tickets) may meet a connection its peer has
    // closed already: EPIPE, not a signal that ends the tests.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    std::vector<pollfd> fds{{fd_, POLLIN, 0}};
    const auto end = std::chrono::steady_clock::now() + 60s;
    while (!stop_ && std::chrono::steady_clock::now() < end) {
      if (::poll(fds.data(), fds.size(), 20) <= 0)
        continue;
      for (std::size_t i = fds.size(); i-- > 1;) {
        if (fds[i].revents == 0)
          continue;
        char buf[4096];
        const auto n = ::recv(fds[i].fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) { // the peer closed it
          ::close(fds[i].fd);
          fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
          ++closed_;
        }
      }
      if (fds[0].revents & POLLIN) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0)
          continue;
        const bool first = accepted_++ == 0;
        if (kind_ == kind::close_at_once) {
          ::close(c);
          ++closed_;
          continue;
        }
        if (kind_ == kind::tls_once && first)
          handshake(c);
        fds.push_back({c, POLLIN, 0});
      }
    }
    for (std::size_t i = 1; i < fds.size(); ++i)
      ::close(fds[i].fd);
  }

  // A TLS handshake on `c` as the node, within 5 s; the connection stays as it is after it.
  void handshake(int c) {
    timeval limit{5, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    SSL* ssl = SSL_new(tls_);
    SSL_set_fd(ssl, c);
    (void)SSL_accept(ssl);
    SSL_free(ssl); // the socket is the listener's to close
  }

  kind kind_;
  int fd_ = -1;
  int port_ = 0;
  SSL_CTX* tls_ = nullptr;
  std::atomic<int> accepted_{0};
  std::atomic<int> closed_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string read_text(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("a node that accepts and never answers fails start-up at start_timeout naming it, "
          "without spinning, leaving no connection, store or directory behind",
          "[nodes]") {
  ag::test::key_ring keys;
  const auto ctl = keys.make("ctl");
  const auto n1 = keys.make("n1");
  const auto start_timeout = 2000ms * ag::test::tsan_slow;
  const auto grace = 3000ms * ag::test::tsan_slow;
  // The node's endpoint, and graph_option::node_timeout ("": its default, 5 s, longer than the
  // start-up's deadline, so CAF's own connection timeout never ends an attempt first).
  auto kind = silent_listener::kind::silent;
  std::string node_timeout;
  SECTION("silent from the start; node_timeout 1 s") { node_timeout = "1000"; }
  SECTION("silent from the start; the default node_timeout") {}
  SECTION("a TLS handshake answered once, then silent") {
    kind = silent_listener::kind::tls_once;
    node_timeout = "1000";
  }
  silent_listener node{kind, n1};
  ag::test::private_tmpdir tmp; // shows every runtime directory the controller makes
  ::setenv("AG_TEST_NODE", ("n1=" + node.endpoint() + "=" + n1 + ".public").c_str(), 1);
  ::setenv("AG_TEST_KEY", (ctl + ".secret").c_str(), 1);
  ::setenv("AG_TEST_NODE_TIMEOUT_MS", node_timeout.c_str(), 1);
  ::setenv("AG_TEST_START_TIMEOUT_MS", std::to_string(start_timeout.count()).c_str(), 1);
  const auto t0 = std::chrono::steady_clock::now();
  auto controller =
    ag::sub_process::spawn(AG_TEST_CONTROLLER, {keys.dir.path(), "1", "start-fails"});
  for (const char* name :
       {"AG_TEST_NODE", "AG_TEST_KEY", "AG_TEST_NODE_TIMEOUT_MS", "AG_TEST_START_TIMEOUT_MS"})
    ::unsetenv(name);
  const auto failed = keys.dir.file("failed");
  // The deadline, its grace, and the time a program takes to start and load its libraries.
  const bool gave_up = ag::test::within(start_timeout + grace + 2000ms, [&] {
    return ::access(failed.c_str(), F_OK) == 0 || !controller.running()
           || controller.try_wait().has_value();
  });
  if (gave_up && ::access(failed.c_str(), F_OK) != 0) {
    const auto status = controller.try_wait();
    ag::remove_leftovers(tmp.path);
    FAIL("the controller ended without reporting a failed start-up: "
         << (status ? status->str() : "still running"));
  }
  if (!gave_up) {
    // Still inside the constructor: what it burned meanwhile.
    const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - t0);
    const long cpu_ms = ag::test::process_cpu_ticks(controller.pid()) * 10;
    const int connections = node.accepted();
    controller.kill_and_reap();
    ag::remove_leftovers(tmp.path);
    INFO("after " << wall.count() << " ms: " << cpu_ms << " ms of CPU, " << connections
                  << " connections to the node");
    FAIL("the runtime's constructor did not give up on the silent node within "
         << (start_timeout + grace).count() << " ms");
  }
  const std::string report = read_text(failed);
  INFO(report);
  long long wall_ms = 0, cpu_ms = 0;
  REQUIRE(std::sscanf(report.c_str(), "%lld %lld", &wall_ms, &cpu_ms) == 2);
  CHECK_THAT(report, Contains("node n1 (" + node.endpoint() + ")"));
  CHECK_THAT(report, Contains("graph_option::start_timeout"));
  CHECK(wall_ms >= start_timeout.count()); // not given up early,
  CHECK(wall_ms <= (start_timeout + grace).count()); // nor late
  CHECK(cpu_ms < wall_ms / 2); // no core spun meanwhile
  // One connection a try, a few tries: not hundreds.
  CHECK(node.accepted() >= 1);
  CHECK(node.accepted() <= 4);
  // While the controller lives on: every connection it opened is closed, and the failed runtime
  // left no store and no directory.
  CHECK(ag::test::within(3000ms, [&] { return node.open() == 0; }));
  CHECK(ag::test::my_shm(controller.pid()).empty());
  CHECK(ag::test::list_dir(tmp.path).empty());
  std::ofstream{keys.dir.file("exit")};
  CHECK(controller.wait_for(5000ms).has_value());
  controller.kill_and_reap();
  ag::remove_leftovers(tmp.path);
}

TEST_CASE("a node that closes every connection at once fails start-up at once naming it, "
          "leaving nothing behind",
          "[nodes]") {
  ag::test::key_ring keys;
  const auto ctl = keys.make("ctl");
  const auto n1 = keys.make("n1");
  silent_listener node{silent_listener::kind::close_at_once};
  ag::test::private_tmpdir tmp;
  ag::graph_option opt;
  opt.per_device_per_process = true;
  opt.runner_path = AG_TEST_RUNNER;
  opt.key_file = ctl + ".secret";
  opt.devices = ag::parse_devices("n1/sim:0");
  opt.store_bytes = std::size_t{64} << 20;
  opt.nodes = {{"n1", node.endpoint(), n1 + ".public"}};
  opt.start_timeout = 10000ms * ag::test::tsan_slow;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(ag::runtime{opt},
                    Contains("node n1 (" + node.endpoint() + ")") && Contains("TLS handshake"));
  CHECK(std::chrono::steady_clock::now() - t0 < 5000ms * ag::test::tsan_slow); // not the deadline
  CHECK(node.accepted() <= 4);
  CHECK(ag::test::my_shm().empty());
  CHECK(ag::test::list_dir(tmp.path).empty());
}
