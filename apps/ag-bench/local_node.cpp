#include "apps/ag-bench/local_node.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "actorgraph/error.hpp"
#include "ipc/cleanup_registry.hpp"
#include "ipc/leftovers.hpp"

namespace ag::bench {

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr auto keygen_timeout = 30s;
constexpr auto listen_timeout = 20s;
constexpr auto stop_timeout = 20s; // ag-node's children get their own stop deadlines within it

// The ag-node that runs, for the signal handlers: 0 when none does.
std::atomic<pid_t> running_node{0};
static_assert(std::atomic<pid_t>::is_always_lock_free);

// `program` in the directory of this executable; throws ag::error naming the path looked at.
std::string beside_ag_bench(const std::string& program) {
  char exe[4096];
  const auto n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    throw error(std::string{"cannot find ag-bench's own path: readlink /proc/self/exe: "}
                + std::strerror(errno));
  exe[n] = '\0';
  const std::string path = std::filesystem::path{exe}.parent_path() / program;
  if (::access(path.c_str(), X_OK) != 0)
    throw error(program + " not found beside ag-bench: " + path + ": " + std::strerror(errno));
  return path;
}

std::string with_log(const logged_process& p) {
  const std::string tail = p.log_tail();
  return tail.empty() ? std::string{" (no output)"} : "; its output:\n" + tail;
}

// Runs ag-keygen for BASE (writes BASE.secret and BASE.public); throws ag::error unless it exits
// with code 0 within keygen_timeout.
void make_identity(const std::string& keygen, const std::string& base, const std::string& log) {
  auto p = logged_process::spawn(keygen, {base}, log);
  const auto& st = p.wait_for(keygen_timeout);
  if (!st)
    throw error(keygen + " " + base + " did not finish within 30 s; killed" + with_log(p));
  if (st->code != 0 || st->signal != 0)
    throw error(keygen + " " + base + " " + st->str() + with_log(p));
}

// The port in ag-node's "ag-node NAME: listening on tcp://127.0.0.1:PORT\n", once the whole line
// is in its log; 0 while it is not.
uint16_t listening_port(const std::string& log, const std::string& name) {
  std::ifstream in{log};
  std::ostringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  const std::string said = "ag-node " + name + ": listening on tcp://127.0.0.1:";
  const auto at = text.find(said);
  const auto end = at == std::string::npos ? at : text.find('\n', at);
  if (end == std::string::npos)
    return 0;
  const std::string port = text.substr(at + said.size(), end - at - said.size());
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    throw error("ag-node printed \"" + text.substr(at, end - at) + "\": no port in it");
  return static_cast<uint16_t>(std::stoul(port));
}

void forward_stop(int sig) {
  if (const pid_t p = running_node.load(); p > 0)
    ::kill(p, SIGTERM);
  // Then what the signal did before: the default, once this handler returns.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

} // namespace

local_node::directory::directory(const std::string& node_name) {
  std::string t = tmp_dir() + "/ag-bench-node-XXXXXX";
  if (::mkdtemp(t.data()) == nullptr)
    throw error("cannot make a directory " + t + ": " + std::strerror(errno));
  path = t;
  // Every file it will hold, before it does: a signal's clean-up removes those that are there.
  for (const auto& base : {std::string{controller}, node_name})
    for (const char* suffix : {".secret", ".public"})
      cleanup_slots.push_back(cleanup::remember_path(file(base + suffix), false));
  for (const char* log : {keygen_log, node_log})
    cleanup_slots.push_back(cleanup::remember_path(file(log), false));
  cleanup_slots.push_back(cleanup::remember_path(path, true));
}

local_node::directory::~directory() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
  for (int slot : cleanup_slots)
    cleanup::forget_path(slot);
}

local_node::local_node(const std::string& name, std::chrono::milliseconds timeout,
                       const std::string& timeline_dir)
  : dir_(name), name_(name) {
  const std::string keygen = beside_ag_bench("ag-keygen");
  const std::string node = beside_ag_bench("ag-node");
  const std::string runner = beside_ag_bench("ag-runner");
  make_identity(keygen, dir_.file(controller), dir_.file(keygen_log));
  make_identity(keygen, dir_.file(name), dir_.file(keygen_log));
  std::vector<std::string> args{"--name=" + name, "--listen=tcp://127.0.0.1:0",
                                "--key=" + dir_.file(name + ".secret"),
                                "--allow=" + dir_.file(std::string{controller} + ".public"),
                                "--runner=" + runner,
                                "--timeout-ms=" + std::to_string(timeout.count())};
  if (!timeline_dir.empty()) {
    std::filesystem::create_directories(timeline_dir);
    args.push_back("--timeline-dir=" + std::filesystem::absolute(timeline_dir).string());
  }
  node_ = logged_process::spawn(node, args, dir_.file(node_log));
  running_node = node_.pid();
  try {
    await_listening(node);
  } catch (...) {
    halt();
    throw;
  }
}

void local_node::await_listening(const std::string& program) {
  const auto deadline = steady::now() + listen_timeout;
  while ((port_ = listening_port(node_.log_file(), name_)) == 0) {
    if (const auto& st = node_.try_wait())
      throw error(program + " " + st->str() + " before it listened" + with_log(node_));
    if (steady::now() >= deadline)
      throw error(program + " did not say where it listens within 20 s; stopped"
                  + with_log(node_));
    std::this_thread::sleep_for(10ms);
  }
}

local_node::~local_node() { halt(); }

void local_node::halt() noexcept {
  if (node_.running()) {
    node_.kill(SIGTERM);
    if (!node_.wait_for(stop_timeout))
      node_.kill_and_reap();
  }
  running_node = 0;
}

std::string local_node::controller_key_file() const {
  return dir_.file(std::string{controller} + ".secret");
}

ag::node local_node::as_node() const {
  return {name_, "tcp://127.0.0.1:" + std::to_string(port_), dir_.file(name_ + ".public")};
}

void local_node::stop() {
  if (!node_.running())
    return;
  node_.kill(SIGTERM);
  const auto& st = node_.wait_for(stop_timeout);
  running_node = 0;
  if (!st) {
    node_.kill_and_reap();
    throw error("ag-node " + name_ + " did not stop within 20 s of SIGTERM; killed"
                + with_log(node_));
  }
  if (st->code != 0 || st->signal != 0)
    throw error("ag-node " + name_ + " " + st->str() + " at SIGTERM" + with_log(node_));
}

void stop_local_node_on_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
    struct sigaction old{};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN)
      continue; // nohup's SIGHUP, a background job's SIGINT: left as they are
    struct sigaction sa{};
    sa.sa_handler = forward_stop;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

} // namespace ag::bench
